"""camdf as Anthropic's client-side tool search, through the real ``anthropic`` SDK and a scripted model.

The SDK's HTTP goes to httpx's MockTransport (``httpx2``, the SDK's own HTTP library), whose handler plays the
Messages API and the model: it checks what the API checks of a tool search (a tool loaded up front, every
``tool_reference`` naming a tool of the request), first calls camdf's search tool with a query, then calls one
of the tools the search loaded. The tests assert on the request bodies the SDK sent, validated with the SDK's
own param types (``ToolParam``, ``ToolResultBlockParam``, ``ToolReferenceBlockParam``).
"""

import json
import re

import anthropic
import httpx2
import pytest
from anthropic.types import TextBlockParam, ToolParam, ToolReferenceBlockParam, ToolResultBlockParam
from pydantic import TypeAdapter

from camdf.adapters.anthropic import NOTHING_FOUND, SEARCH_TOOL, ToolSearch
from camdf.runtime.search import search_tools
from camdf.runtime.toolset import FailOpenWarning, ToolChooser

from .conftest import CATALOG, LAM, QUERY

#: service -> (its name, {object: (one, many)}): 16 SaaS APIs, 44 objects, five verbs each: 220 tools.
SERVICES = {
    "stripe": ("Stripe", {"customer": ("a billing customer", "billing customers"),
                          "invoice": ("an invoice", "invoices"),
                          "refund": ("a refund of a charge", "refunds"),
                          "subscription": ("a subscription", "subscriptions"),
                          "payment_intent": ("a payment intent", "payment intents")}),
    "zendesk": ("Zendesk", {"ticket": ("a support ticket", "support tickets"),
                            "ticket_comment": ("a comment on a support ticket", "ticket comments"),
                            "macro": ("a support macro", "support macros")}),
    "salesforce": ("Salesforce", {"lead": ("a sales lead", "sales leads"),
                                  "opportunity": ("an opportunity", "opportunities"),
                                  "account": ("a CRM account", "CRM accounts"),
                                  "contact": ("a CRM contact", "CRM contacts")}),
    "slack": ("Slack", {"message": ("a message in a channel", "channel messages"), "channel": ("a channel", "channels"),
                        "reminder": ("a reminder", "reminders")}),
    "github": ("GitHub", {"issue": ("an issue of a repository", "repository issues"),
                          "pull_request": ("a pull request", "pull requests"), "release": ("a release", "releases")}),
    "jira": ("Jira", {"issue": ("an issue of a project", "project issues"), "sprint": ("a sprint", "sprints"),
                      "comment": ("a comment on an issue", "issue comments")}),
    "hubspot": ("HubSpot", {"deal": ("a deal in the pipeline", "deals"),
                            "company": ("a company record", "company records"),
                            "email_campaign": ("a marketing email campaign", "marketing email campaigns")}),
    "shopify": ("Shopify", {"order": ("a store order", "store orders"), "product": ("a product", "products"),
                            "fulfillment": ("the shipment of an order", "shipments"),
                            "discount_code": ("a discount code", "discount codes")}),
    "twilio": ("Twilio", {"sms": ("an SMS text message", "SMS text messages"),
                          "call": ("a phone call", "phone calls")}),
    "google_calendar": ("Google Calendar", {"event": ("a calendar event", "calendar events"),
                                            "calendar": ("a calendar", "calendars")}),
    "gmail": ("Gmail", {"email": ("an email", "emails"), "draft": ("an email draft", "email drafts"),
                        "label": ("a mailbox label", "mailbox labels")}),
    "notion": ("Notion", {"page": ("a page of a workspace", "pages"), "database": ("a database", "databases")}),
    "pagerduty": ("PagerDuty", {"incident": ("an incident", "incidents"),
                                "schedule": ("an on-call schedule", "on-call schedules")}),
    "quickbooks": ("QuickBooks", {"bill": ("a vendor bill", "vendor bills"), "expense": ("an expense", "expenses")}),
    "docusign": ("DocuSign", {"envelope": ("an envelope of documents to sign", "envelopes")}),
    "zoom": ("Zoom", {"meeting": ("a video meeting", "video meetings"),
                      "recording": ("a cloud recording", "cloud recordings")}),
}


def _tool(svc: str, label: str, verb: str, obj: str, one: str, many: str) -> dict:
    noun = obj.replace("_", " ")
    key = {f"{obj}_id": {"type": "string", "description": f"The {label} id of the {noun}."}}
    fields = {"fields": {"type": "object", "additionalProperties": True,
                         "description": f"The {noun}'s fields to set, by their {label} API names."}}
    text, props, required = {
        "create": (f"Create {one} in {label}.", fields, ["fields"]),
        "get": (f"Get {one} from {label} by its id.", key, [f"{obj}_id"]),
        "update": (f"Update {one} in {label}: set the given fields, keep the others.", {**key, **fields},
                   [f"{obj}_id", "fields"]),
        "list": (f"List the {many} in {label}, newest first, a page at a time.",
                 {"limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Page size."},
                  "cursor": {"type": "string", "description": "The cursor of the page to read."}}, []),
        "delete": (f"Delete {one} from {label} (it cannot be undone).", key, [f"{obj}_id"]),
    }[verb]
    return {"name": f"{svc}_{verb}_{obj}", "description": text,
            "parameters": {"type": "object", "properties": props, "required": required}}


#: A SaaS catalog of plain descriptions (``name``, ``description``, ``parameters``), 220 tools.
SAAS = [_tool(svc, label, verb, obj, one, many) for svc, (label, objects) in SERVICES.items()
        for obj, (one, many) in objects.items() for verb in ("create", "get", "update", "list", "delete")]
#: The same catalog as Messages API tools.
TOOLS = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in SAAS]
PRELOAD = ["slack_create_message", "zendesk_create_ticket"]
TASK = "The customer was charged twice for one Stripe invoice: refund the duplicate charge and tell them on Slack."
SEARCH_QUERY = "refund the duplicate charge on the customer invoice"


def _valid(param_type, value: dict) -> dict:
    """``value`` checked against one of the SDK's TypedDict params: types strictly, and no key it does not know."""
    TypeAdapter(param_type).validate_python(value, strict=True)
    unknown = set(value) - (param_type.__required_keys__ | param_type.__optional_keys__)
    assert not unknown, f"{param_type.__name__}: unknown keys {unknown}"
    return value


class ScriptedClaude:
    """The Messages API and a model, as an httpx2 handler: what the API checks of a tool search, a scripted model.

    The first request gets a call of camdf's search tool with ``query``; later ones a call of the tool loaded so far
    whose name shares the most words with the user's task (the first one loaded, on a tie), as a model that calls a
    tool it was shown would.
    """

    def __init__(self, query: str):
        self.query = query
        self.bodies: list[dict] = []

    def _error(self, message: str) -> httpx2.Response:
        return httpx2.Response(400, json={"type": "error", "error": {"type": "invalid_request_error",
                                                                     "message": message}})

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        tools = {t["name"]: t for t in body["tools"]}
        loaded = [n for n, t in tools.items() if not t.get("defer_loading")]
        if not loaded:
            return self._error("tools: at least one tool must not set defer_loading")
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                    for ref in (c for c in block["content"] if c["type"] == "tool_reference"):
                        if ref["tool_name"] not in tools:
                            return self._error(f"tool_reference: no tool named {ref['tool_name']!r}")
                        loaded.append(ref["tool_name"])
        n = len(self.bodies)
        if n == 1:
            call = {"name": SEARCH_TOOL, "input": {"query": self.query}}
        else:
            words = set(re.findall(r"[a-z]+", body["messages"][0]["content"].lower()))
            pick = max((x for x in loaded if x != SEARCH_TOOL), key=lambda x: len(set(x.split("_")) & words))
            call = {"name": pick, "input": {}}
        return httpx2.Response(200, json={
            "id": f"msg_{n:02d}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "tool_use", "id": f"toolu_{n:02d}", **call}], "stop_reason": "tool_use",
            "stop_sequence": None, "usage": {"input_tokens": 1000, "output_tokens": 20}})


def _client(model: ScriptedClaude) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", base_url="http://test", max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(model)))


def _converse(search: ToolSearch, query: str = SEARCH_QUERY):
    """One task through the SDK: the model searches, camdf answers, the model calls a tool. Returns the scripted
    model (with the request bodies) and the tool the model called."""
    model = ScriptedClaude(query)
    client = _client(model)
    messages = [{"role": "user", "content": TASK}]
    tools = search.prepare(TOOLS)
    first = client.messages.create(model="claude-sonnet-4-6", max_tokens=1024, tools=tools, messages=messages)
    (tool_use,) = first.content
    assert tool_use.type == "tool_use" and tool_use.name == SEARCH_TOOL
    answer = search.result(tool_use, TOOLS)  # the SDK's own ToolUseBlock, as the response holds it
    messages += [{"role": "assistant", "content": first.content}, {"role": "user", "content": [answer]}]
    second = client.messages.create(model="claude-sonnet-4-6", max_tokens=1024, tools=tools, messages=messages)
    (called,) = second.content
    return model, called


def _references(body: dict) -> tuple[dict, list[str]]:
    """The tool_result of the last user message of a request body, and its tool_reference names (validated)."""
    (result,) = body["messages"][-1]["content"]
    _valid(ToolResultBlockParam, result)
    for block in result["content"]:
        _valid(ToolReferenceBlockParam if block["type"] == "tool_reference" else TextBlockParam, block)
    return result, [b["tool_name"] for b in result["content"] if b["type"] == "tool_reference"]


def test_the_model_searches_gets_camdfs_cost_aware_set_and_calls_a_tool_it_found():
    model, called = _converse(ToolSearch(preload=PRELOAD))
    first, second = model.bodies
    # The request: the search tool and the preload loaded up front, every other tool deferred.
    assert [t["name"] for t in first["tools"]] == [SEARCH_TOOL] + [t["name"] for t in TOOLS]
    for tool in first["tools"]:
        _valid(ToolParam, tool)
    assert {t["name"] for t in first["tools"] if "defer_loading" not in t} == {SEARCH_TOOL, *PRELOAD}
    assert all(t["defer_loading"] is True for t in first["tools"] if t["name"] not in {SEARCH_TOOL, *PRELOAD})
    assert second["tools"] == first["tools"]  # one tool list for the whole conversation: the prompt cache holds
    # The answer: a tool_result for the search's tool_use whose references are camdf's set, no preloaded tool.
    result, names = _references(second)
    assert result["tool_use_id"] == second["messages"][1]["content"][0]["id"] == "toolu_01"
    want = search_tools(ToolChooser(), SAAS, SEARCH_QUERY, preload=PRELOAD)
    assert want.error is None and names == list(want.names)
    assert 0 < len(names) < len(SAAS) - len(PRELOAD) and not set(names) & set(PRELOAD)
    # The model called a tool the search loaded, and the one the task needs.
    assert called.type == "tool_use" and called.name in names and "refund" in called.name


def test_the_set_is_the_policys_not_a_fixed_k_and_max_results_caps_it():
    search = ToolSearch(preload=PRELOAD)
    sizes = {q: len(search.result({"type": "tool_use", "id": "toolu_x", "name": SEARCH_TOOL, "input": {"query": q}},
                                  TOOLS)["content"])
             for q in (SEARCH_QUERY, "open a support ticket for the failed payment")}
    assert len(set(sizes.values())) == 2, sizes  # two queries, two sizes: the policy's stop, not a k
    model, called = _converse(ToolSearch(preload=PRELOAD, max_results=3))
    _, names = _references(model.bodies[1])
    assert names == list(search_tools(ToolChooser(), SAAS, SEARCH_QUERY, preload=PRELOAD).names[:3])
    assert called.name in names


class Broken:
    def select(self, *args, **kwargs):
        raise RuntimeError("policy exploded")


def test_a_broken_policy_references_every_deferred_tool_with_one_warning():
    with pytest.warns(FailOpenWarning, match="policy exploded") as caught:
        model, called = _converse(ToolSearch(Broken(), preload=PRELOAD))
    assert len([w for w in caught if issubclass(w.category, FailOpenWarning)]) == 1
    _, names = _references(model.bodies[1])
    assert names == [t["name"] for t in TOOLS if t["name"] not in PRELOAD]
    assert called.name in names


def test_an_empty_query_answers_with_a_text_block():
    block = ToolSearch(preload=PRELOAD).result({"type": "tool_use", "id": "toolu_e", "name": SEARCH_TOOL,
                                                "input": {"query": "  "}}, TOOLS)
    assert block == {"type": "tool_result", "tool_use_id": "toolu_e",
                     "content": [{"type": "text", "text": NOTHING_FOUND}]}
    _valid(ToolResultBlockParam, block)


def test_preload_and_max_results_are_checked_at_the_boundary():
    with pytest.raises(ValueError, match="preload: expected a list of tool names"):
        ToolSearch(preload="slack_create_message")
    with pytest.raises(ValueError, match="max_results: expected an integer >= 1"):
        ToolSearch(max_results=0)
    with pytest.raises(ValueError, match=r"preload: \['slack_send_message'\] are not among the tools"):
        ToolSearch(preload=["slack_send_message"]).prepare(TOOLS)
    with pytest.raises(ValueError, match="tool_use: expected a tool_use block calling 'camdf_tool_search'"):
        ToolSearch().result({"type": "tool_use", "name": SEARCH_TOOL, "input": {}}, TOOLS)  # no id


def test_a_deferring_policy_never_returns_a_preloaded_tool():
    from camdf.runtime import StopPolicy

    from ..core.test_theory import _family

    policy = StopPolicy(method="fallback_set", lam=0.2, dials={"search_cost": 2.0, "search_k": 3}).fit(
        _family(60, True), costs={"x": 6.0})
    sel = policy.select(CATALOG, query=QUERY, lam=LAM)
    tools = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in CATALOG]
    query = "send the invoice and a coupon"
    plain = ToolSearch(policy, lam=LAM, search_k=2).result(
        {"type": "tool_use", "id": "t1", "name": SEARCH_TOOL, "input": {"query": query}}, tools, task=QUERY)
    first = plain["content"][0]["tool_name"]
    assert first in sel.deferred
    search = ToolSearch(policy, lam=LAM, search_k=2, preload=[first])
    assert {t["name"] for t in search.prepare(tools, task=QUERY) if "defer_loading" not in t} == {
        SEARCH_TOOL, first, *sel.exposed}
    block = search.result({"type": "tool_use", "id": "t1", "name": SEARCH_TOOL, "input": {"query": query}}, tools,
                          task=QUERY)
    names = [c["tool_name"] for c in block["content"]]
    assert names and first not in names and set(names) <= set(sel.deferred)


def test_the_same_tools_are_read_once_and_a_changed_tool_is_read_again():
    """The last list is kept (a conversation sends the same tools each turn); a tool changed in place, replaced, or a
    list of another length is read again: the answer is always the one a fresh ToolSearch gives."""
    search = ToolSearch()
    call = {"type": "tool_use", "id": "toolu_x", "name": SEARCH_TOOL, "input": {"query": SEARCH_QUERY}}
    tools = [dict(t) for t in TOOLS]
    first = search.result(call, tools)
    assert search._cached_plains(tools) is search._cached_plains(tools)  # kept
    assert search.result(call, tools) == first
    renamed = next(r["tool_name"] for r in first["content"])
    at = next(i for i, t in enumerate(tools) if t["name"] == renamed)
    tools[at]["name"] = "renamed_tool"  # in place: the same dict, another name
    changed = search.result(call, tools)
    assert changed == ToolSearch().result(call, tools) and renamed not in {r["tool_name"] for r in changed["content"]}
    tools[at] = {**tools[at], "name": tools[0]["name"]}  # replaced by a duplicate: refused, not served from the cache
    with pytest.raises(ValueError, match=r"tools\[\d+\]: the name .* is also tools\[0\]'s"):
        search.result(call, tools)
    tools[at] = {**tools[at], "name": "another_tool"}
    assert search.result(call, tools[:-1]) == ToolSearch().result(call, tools[:-1])  # another length
