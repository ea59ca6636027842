"""Single-table design: the counter item lives in the model's own table (gapless).

    python examples/single_table.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _backend import META, dynamodb  # noqa: E402
from pynamodb.attributes import NumberAttribute, UnicodeAttribute  # noqa: E402
from pynamodb.models import Model  # noqa: E402

from pynamodb_autoinc import AutoIncrementMixin
from pynamodb_autoinc.exceptions import ItemExistsError  # noqa: E402


class User(AutoIncrementMixin, Model):
    class Meta:
        table_name = "Users"
        autoinc_attribute = "num_identifier"
        autoinc_key = "UserMetadata"
        autoinc_counter_in_table = True
        autoinc_gapless = True
        region = META["region"]
        host = META["host"]

    pk = UnicodeAttribute(hash_key=True)
    num_identifier = NumberAttribute(null=True)
    user_name = UnicodeAttribute(null=True)


def main() -> None:
    with dynamodb() as where:
        print(f"DynamoDB: {where}")
        if not User.exists():
            User.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        for name in ("Uros", "Alex", "Luc"):
            user = User(pk=f"User#{name}", user_name=name)
            user.save()
            print(f"{user.pk}: {user.num_identifier}")
        try:
            User(pk="User#Alex", user_name="Alex again").save()
        except ItemExistsError:
            print("User#Alex exists: refused, and no number was spent")
        print("User.scan():", [u.pk for u in User.scan()])
        raw = User._get_connection().scan()["Items"]
        print("the table itself:", sorted(item["pk"]["S"] for item in raw))


if __name__ == "__main__":
    main()
