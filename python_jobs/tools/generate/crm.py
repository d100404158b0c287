"""Nightly full exports of a CRM's accounts with real churn, and the changelog they must give.

Between two exports some accounts change (status, owner, revenue, an industry that goes blank or gets
filled in), some are deleted, a few deleted ones come back, and new ones arrive. The columns are those of
the hand-written ``samples/changelog`` exports, so the same ``crm_accounts`` model reads both.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

DATASET = "crm_accounts"
PRIMARY_KEY = ("account_id",)
COLUMNS = (
    "account_id", "account_name", "country", "industry", "owner_email", "annual_revenue", "status", "updated_at"
)
FIRST_EXPORT = datetime(2026, 1, 5, 2, 0, tzinfo=UTC)
APPEND, RETRACT, CORRECT_FROM, CORRECT_TO = 0, 1, 2, 3

_WORDS = ("Northwind", "Contoso", "Fabrikam", "Litware", "Tailspin", "Adventure", "Alpine", "Blue Yonder",
          "Proseware", "Wingtip", "Coho", "Lucerne", "Margie", "Humongous", "Trey", "Wide World")
_KINDS = ("Traders", "Robotics", "Health", "Airlines", "Foods", "Software", "Logistics", "Bank")
_COUNTRIES = ("US", "DE", "JP", "FR", "GB", "BR", "IN", "CA")
_INDUSTRIES = ("Wholesale", "Healthcare", "Manufacturing", "Retail", "Finance", "Software", None)
_OWNERS = ("maria.lopez", "jonas.weber", "aiko.tanaka", "sam.okafor", "lea.martin", "raj.patel")
_STATUSES = ("active", "active", "active", "trial", "churned")

Account = dict[str, object]


@dataclass(frozen=True)
class Export:
    """One full export: when it was taken, when it was loaded, its rows in key order."""

    snapshot_time: datetime
    system_time: datetime
    rows: tuple[Account, ...]


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _new_account(rng: random.Random, number: int, moment: datetime) -> Account:
    return {
        "account_id": f"A-{number:06d}",
        "account_name": f"{rng.choice(_WORDS)} {rng.choice(_KINDS)} {number}",
        "country": rng.choice(_COUNTRIES),
        "industry": rng.choice(_INDUSTRIES),
        "owner_email": f"{rng.choice(_OWNERS)}@example.com",
        "annual_revenue": rng.randrange(50, 50_000) * 1000,
        "status": rng.choice(_STATUSES),
        "updated_at": _stamp(moment - timedelta(days=rng.randint(1, 400), minutes=rng.randint(0, 1439))),
    }


def _changed(rng: random.Random, account: Account, moment: datetime) -> Account:
    column = rng.choice(("status", "owner_email", "annual_revenue", "industry", "account_name"))
    updated = dict(account)
    if column == "status":
        updated["status"] = "churned" if account["status"] != "churned" else "active"
    elif column == "owner_email":
        updated["owner_email"] = f"{rng.choice(_OWNERS)}.{rng.randint(1, 9)}@example.com"
    elif column == "annual_revenue":
        updated["annual_revenue"] = int(account["annual_revenue"]) + rng.randrange(1, 500) * 1000  # type: ignore[call-overload]
    elif column == "industry":
        updated["industry"] = None if account["industry"] is not None else rng.choice(_INDUSTRIES[:-1])
    else:
        updated["account_name"] = f"{account['account_name']} Group"
    updated["updated_at"] = _stamp(moment - timedelta(minutes=rng.randint(30, 600)))
    return updated


def crm_exports(accounts: int, exports: int, seed: int) -> list[Export]:
    """``exports`` nightly exports starting from ``accounts`` accounts; per night about 3% change, 1.5%
    are deleted, 2% are new and a third of the accounts deleted earlier come back."""
    rng = random.Random(f"{seed}:crm")
    state: dict[str, Account] = {}
    for number in range(1, accounts + 1):
        account = _new_account(rng, number, FIRST_EXPORT)
        state[str(account["account_id"])] = account
    deleted: dict[str, Account] = {}
    next_number = accounts + 1
    result: list[Export] = []
    for night in range(exports):
        taken = FIRST_EXPORT + timedelta(days=night)
        if night:
            keys = sorted(state)
            for key in rng.sample(keys, max(1, len(keys) * 3 // 100)):
                state[key] = _changed(rng, state[key], taken)
            for key in rng.sample(keys, max(1, len(keys) * 3 // 200)):
                deleted[key] = state.pop(key)
            for key in rng.sample(sorted(deleted), len(deleted) // 3):
                back = deleted.pop(key)
                state[key] = _changed(rng, back, taken) if rng.random() < 0.5 else back
            for _ in range(max(1, accounts // 50)):
                account = _new_account(rng, next_number, taken)
                state[str(account["account_id"])] = account
                next_number += 1
        loaded = taken + timedelta(minutes=5, seconds=rng.randint(0, 240))
        result.append(Export(taken, loaded, tuple(state[key] for key in sorted(state))))
    return result


def changelog_ops(previous: Sequence[Account], current: Sequence[Account]) -> Counter[int]:
    """The ops a changelog must hold for going from one full export to the next (+A, -R, -C/+C pairs)."""
    before = {row["account_id"]: row for row in previous}
    after = {row["account_id"]: row for row in current}
    ops: Counter[int] = Counter()
    ops[APPEND] += sum(1 for key in after if key not in before)
    ops[RETRACT] += sum(1 for key in before if key not in after)
    changed = sum(1 for key in after if key in before and after[key] != before[key])
    ops[CORRECT_FROM] += changed
    ops[CORRECT_TO] += changed
    return +ops


def expected_changelog(exports: Sequence[Export]) -> list[Counter[int]]:
    """Per export, the ops its changelog round must add."""
    previous: Sequence[Account] = ()
    expected = []
    for export in exports:
        expected.append(changelog_ops(previous, export.rows))
        previous = export.rows
    return expected


def reappearing_keys(exports: Sequence[Export]) -> list[str]:
    """Keys missing from some export after being in an earlier one, and back in a later one."""
    seen: set[str] = set()
    gone: set[str] = set()
    back: set[str] = set()
    for export in exports:
        keys = {str(row["account_id"]) for row in export.rows}
        back |= gone & keys
        gone = (gone | (seen - keys)) - keys
        seen |= keys
    return sorted(back)
