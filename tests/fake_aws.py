"""Dummy AWS settings for moto and DynamoDB Local (imported for its effect; never real credentials)."""

from __future__ import annotations

import os

for _name, _value in {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
}.items():
    os.environ.setdefault(_name, _value)
