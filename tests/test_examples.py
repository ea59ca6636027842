"""Every example runs as documented (on the embedded moto default) and prints what it promises."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

EXPECTED = {
    "counter_attribute.py": ["new page: views=0 stock=100", "after a save and an update: views=2 stock=98",
                             "a save from an unread instance: views=3", "ticket 1: edits=2"],
    "history.py": ["bob lost version 3; the article is at revision 3",
                   "bob merged: revision 4, 'Hello, world' / \"Bob's edit.\"", "v5: deleted", "v1: 'Hello' / None",
                   "version 1 was 'Hello'"],
    "quickstart.py": ["User 'McCoy' got id 3", "Duplicate refused: a member with pk='User#Alex' exists",
                      "Member counter after the refused save: 3 (no number spent)",
                      "In one TransactWrite: User#Ada=4, User#Bob=5"],
    "sequences.py": ["issue api-2", "comment api-1#2", "2027-01-01: INV-2027-000001", "no seat: sequence 'demo-seats'",
                     "locker 1 for dee", "no locker for eve: locker 2 is still bob's"],
    "request_quota.py": ["2026-12-20 request 4/3: 429 quota exceeded", "2027-01-02 request 1/3: ok"],
    "composite_key.py": ["like(a111, u222) -> already liked", "likes of a111: ['u222', 'u333']"],
    "single_table.py": ["User#Luc: 3", "User.scan(): ['User#Alex', 'User#Luc', 'User#Uros']"],
    "async_app.py": ["10 concurrent requests got invoices [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]", "invoice 1: channel=web",
                     "invoice 1 exists: refused, nothing overwritten",
                     "after a bulk save and a transaction: counter at 13",
                     "a request cancelled before its save started: counter still at 13"],
}


def test_every_example_is_checked():
    """Each example file in examples/ has expectations here."""
    assert sorted(p.name for p in EXAMPLES.glob("[!_]*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_uses_public_api_only(name):
    """The example reaches no private name: no ``._x`` attribute or module, and nothing beside it on sys.path."""
    source = (EXAMPLES / name).read_text()
    assert re.findall(r"\._[a-z]\w*|\bsys\.path\b|^from _(?!_future__)\w+|^import _\w+", source, re.M) == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_keeps_to_its_own_tables_and_counters(name):
    """Every table and counter key the example names starts with ``demo-``: run with DYNAMODB_HOST on an endpoint
    an application uses too, it writes none of the application's tables and moves none of its counters (the
    quickstart demo once moved an application's counter ``user`` from 10 to 13)."""
    source = (EXAMPLES / name).read_text()
    tables = re.findall(r"table_name = \"([^\"]*)\"", source)
    keys = re.findall(r"NextId\.\w+\([\"']([^\"']*)[\"']", source)
    if "autoinc_counter_in_table = True" not in source:  # a counter kept in the model's table is the demo's own
        keys += re.findall(r"autoinc_key = \"([^\"]*)\"", source)
    assert tables and [n for n in tables + keys if not n.startswith("demo-")] == []


#: The examples that need an extra beyond ``demo``, by the module it installs.
NEEDS = {"async_app.py": "aiobotocore"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name):
    """The example exits 0 on moto and prints its key lines."""
    if name in NEEDS and importlib.util.find_spec(NEEDS[name]) is None:
        pytest.skip(f"{name} needs {NEEDS[name]}: pip install 'pynamodb-autoinc[async]'")
    env = {k: v for k, v in os.environ.items() if k != "DYNAMODB_HOST"}
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    for line in EXPECTED[name]:
        assert line in done.stdout
