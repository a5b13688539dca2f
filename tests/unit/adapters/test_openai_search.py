"""camdf as OpenAI's tool search: the Responses API's client-executed ``tool_search`` driven through the real
``openai`` client (a scripted model behind an httpx transport), and the Agents SDK's runner with camdf's search
tool (a scripted model) and with OpenAI's hosted search (the SDK's own Responses model over the transport)."""

import asyncio
import json
import warnings

import httpx
import openai
import pytest
from agents import Agent, FunctionTool, ModelBehaviorError, Runner, ToolSearchTool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.models.openai_responses import OpenAIResponsesModel
from agents.usage import Usage
from openai.types.responses import (FunctionToolParam, ResponseFunctionToolCall, ResponseInputItemParam,
                                    ResponseOutputMessage, ResponseOutputText, ResponseToolSearchCall, ToolParam,
                                    ToolSearchToolParam)
from openai.types.responses.response_tool_search_output_item_param import ResponseToolSearchOutputItemParam
from openai.types.responses.response_tool_search_output_item_param_param import ResponseToolSearchOutputItemParamParam
from pydantic import TypeAdapter

from camdf.adapters.openai_agents import SEARCH_TOOL, CamdfToolFilter
from camdf.adapters.openai_responses import ClientToolSearch
from camdf.runtime.loading import load_policy
from camdf.runtime.search import search_tools
from camdf.runtime.toolset import FailOpenWarning, ToolChooser
from camdf.runtime.tooltext import describe_tool

from .conftest import CATALOG, LAM, QUERY

set_tracing_disabled(True)  # the SDK's own trace export would need the network


def _p(kind: str, text: str) -> dict:
    return {"type": kind, "description": text}


# app -> (label, resource -> (noun, plural, fields a create or an update takes))
APPS = {
    "slack": ("Slack", {
        "message": ("message in a channel", "messages in a channel", {
            "channel": _p("string", "Channel id, e.g. C024BE91L"), "text": _p("string", "Message text (mrkdwn)")}),
        "channel": ("channel", "channels", {
            "name": _p("string", "Channel name without #"), "is_private": _p("boolean", "Make it private")}),
        "reminder": ("reminder for a user", "reminders", {
            "text": _p("string", "What to remind about"), "time": _p("string", "When, e.g. 'in 15 minutes'")})}),
    "github": ("GitHub", {
        "issue": ("issue in a repository", "issues of a repository", {
            "repo": _p("string", "owner/name"), "title": _p("string", "Issue title"),
            "body": _p("string", "Issue body (markdown)")}),
        "pull_request": ("pull request", "pull requests", {
            "repo": _p("string", "owner/name"), "head": _p("string", "Branch with the changes"),
            "base": _p("string", "Branch to merge into")}),
        "release": ("release of a repository", "releases", {
            "repo": _p("string", "owner/name"), "tag_name": _p("string", "Tag, e.g. v1.2.0")})}),
    "jira": ("Jira", {
        "issue": ("issue (bug, story or task) in a project", "issues matching a JQL query", {
            "project_key": _p("string", "Project key, e.g. ENG"), "summary": _p("string", "One-line summary"),
            "issue_type": _p("string", "Bug, Story or Task")}),
        "sprint": ("sprint of a board", "sprints of a board", {
            "board_id": _p("integer", "Board id"), "goal": _p("string", "Sprint goal")}),
        "comment": ("comment on an issue", "comments on an issue", {
            "issue_key": _p("string", "Issue key, e.g. ENG-42"), "body": _p("string", "Comment text")})}),
    "stripe": ("Stripe", {
        "customer": ("customer", "customers", {
            "email": _p("string", "Customer email"), "name": _p("string", "Full name")}),
        "refund": ("refund of a charge or payment intent", "refunds", {
            "payment_intent": _p("string", "PaymentIntent id, pi_..."),
            "amount": _p("integer", "Amount in cents; omit for a full refund"),
            "reason": _p("string", "duplicate, fraudulent or requested_by_customer")}),
        "subscription": ("subscription of a customer to a price", "subscriptions", {
            "customer": _p("string", "Customer id, cus_..."), "price": _p("string", "Price id, price_...")}),
        "invoice": ("invoice for a customer", "invoices", {
            "customer": _p("string", "Customer id, cus_..."), "due_date": _p("integer", "Unix time it is due")})}),
    "salesforce": ("Salesforce", {
        "lead": ("lead", "leads", {"company": _p("string", "Company name"), "last_name": _p("string", "Last name")}),
        "opportunity": ("opportunity (deal) on an account", "opportunities", {
            "account_id": _p("string", "Account id"), "stage_name": _p("string", "Sales stage"),
            "amount": _p("number", "Deal amount")}),
        "account": ("account (company)", "accounts", {
            "name": _p("string", "Account name"), "industry": _p("string", "Industry")})}),
    "zendesk": ("Zendesk", {
        "ticket": ("support ticket", "support tickets", {
            "subject": _p("string", "Ticket subject"), "priority": _p("string", "low, normal, high or urgent"),
            "requester_email": _p("string", "Who asked")}),
        "macro": ("macro (canned reply)", "macros", {
            "title": _p("string", "Macro title"), "actions": _p("string", "Actions as JSON")})}),
    "hubspot": ("HubSpot", {
        "contact": ("CRM contact", "CRM contacts", {
            "email": _p("string", "Contact email"), "lifecyclestage": _p("string", "lead, customer, ...")}),
        "deal": ("deal in a pipeline", "deals", {
            "dealname": _p("string", "Deal name"), "pipeline": _p("string", "Pipeline id"),
            "amount": _p("number", "Deal value")})}),
    "google_calendar": ("Google Calendar", {
        "event": ("calendar event", "calendar events", {
            "calendar_id": _p("string", "Calendar id or 'primary'"), "start": _p("string", "RFC 3339 start"),
            "end": _p("string", "RFC 3339 end"),
            "attendees": {"type": "array", "items": {"type": "string"}, "description": "Attendee emails"}})}),
    "gmail": ("Gmail", {
        "email": ("email message", "email messages", {
            "to": _p("string", "Recipient addresses"), "subject": _p("string", "Subject line"),
            "body": _p("string", "Plain-text body")}),
        "draft": ("draft email", "drafts", {"to": _p("string", "Recipients"), "subject": _p("string", "Subject")}),
        "label": ("label for messages", "labels", {"name": _p("string", "Label name")})}),
    "notion": ("Notion", {
        "page": ("page in a workspace", "pages", {
            "parent_id": _p("string", "Parent page or database id"), "title": _p("string", "Page title")}),
        "database": ("database", "databases", {
            "parent_id": _p("string", "Parent page id"), "title": _p("string", "Database title")})}),
    "shopify": ("Shopify", {
        "order": ("store order", "store orders", {
            "line_items": {"type": "array", "items": {"type": "object"}, "description": "Products and quantities"},
            "email": _p("string", "Buyer email")}),
        "product": ("product in the catalog", "products", {
            "title": _p("string", "Product title"), "price": _p("string", "Price, e.g. '19.99'")}),
        "fulfillment": ("fulfillment (shipment) of an order", "fulfillments of an order", {
            "order_id": _p("integer", "Order id"), "tracking_number": _p("string", "Carrier tracking number")})}),
    "twilio": ("Twilio", {
        "sms": ("SMS message", "SMS messages", {"to": _p("string", "E.164 phone number"),
                                                "body": _p("string", "Message text")}),
        "call": ("phone call", "phone calls", {"to": _p("string", "E.164 phone number"),
                                               "twiml": _p("string", "TwiML instructions")})}),
    "asana": ("Asana", {
        "task": ("task in a project", "tasks of a project", {
            "project_gid": _p("string", "Project id"), "name": _p("string", "Task name"),
            "due_on": _p("string", "Due date, YYYY-MM-DD")})}),
    "pagerduty": ("PagerDuty", {
        "incident": ("incident on a service", "incidents", {
            "service_id": _p("string", "Service id"), "title": _p("string", "What is broken"),
            "urgency": _p("string", "high or low")})}),
    "datadog": ("Datadog", {
        "monitor": ("monitor (alert rule)", "monitors", {
            "query": _p("string", "Metric query"), "threshold": _p("number", "Critical threshold")})}),
}


def _saas() -> list[dict]:
    """170 Responses API function tools: 15 SaaS apps, their resources, five verbs each, with JSON schemas."""
    tools = []
    for app, (label, resources) in APPS.items():
        for res, (noun, plural, fields) in resources.items():
            the_id = {"id": _p("string", f"The {res.replace('_', ' ')} id")}
            verbs = {
                "list": (f"List {plural} in {label}, newest first.", {
                    "limit": _p("integer", "At most this many"), "cursor": _p("string", "Page cursor")}, []),
                "get": (f"Get one {noun} in {label} by its id, with all its fields.", the_id, ["id"]),
                "create": (f"Create a {noun} in {label}.", fields, list(fields)[:1]),
                "update": (f"Update a {noun} in {label}: change any of its fields.", {**the_id, **fields}, ["id"]),
                "delete": (f"Delete a {noun} in {label}; this cannot be undone.", the_id, ["id"]),
            }
            for verb, (text, props, required) in verbs.items():
                tools.append({"type": "function", "name": f"{app}_{verb}_{res}", "description": text,
                              "parameters": {"type": "object", "properties": props, "required": required},
                              "strict": False})
    return tools


SAAS = _saas()
PRELOAD = ["slack_create_message", "gmail_create_email", "jira_create_issue"]
ASK = "refund the customer's stripe payment, it was charged twice"


class Broken:
    def select(self, *args, **kwargs):
        raise RuntimeError("policy exploded")


@pytest.fixture(scope="module")
def default_policy():
    """The package's default policy, loaded once (what ``ClientToolSearch()`` without a policy uses)."""
    return load_policy()


@pytest.fixture(scope="module")
def camdf_set(default_policy):
    """camdf's answer to ASK over SAAS without PRELOAD, from the shared search semantics."""
    plain = [describe_tool(t) for t in SAAS]
    names = search_tools(ToolChooser(default_policy), plain, ASK, preload=PRELOAD).names
    assert 0 < len(names) < len(SAAS) - len(PRELOAD), names  # a set, not nothing and not everything
    assert "stripe_create_refund" in names, names
    return names


def _keys(typed_dict) -> set[str]:
    return set(typed_dict.__required_keys__) | set(typed_dict.__optional_keys__)


# -- the Responses API --------------------------------------------------------------------------------------------

class ScriptedResponses:
    """A model behind the Responses endpoint: it records each request body the SDK sends and answers, in turn,
    with a client tool_search_call, then a function_call of a tool the tool_search_output loaded (one named for a
    refund, if it was loaded)."""

    def __init__(self, query: str):
        self.query, self.bodies = query, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/responses")
        body = json.loads(request.content)
        self.bodies.append(body)
        if len(self.bodies) == 1:
            out = {"type": "tool_search_call", "id": "tsc_1", "call_id": "call_search_1", "execution": "client",
                   "status": "completed", "arguments": {"query": self.query}}
        else:
            loaded = [t["name"] for i in body["input"] if i.get("type") == "tool_search_output" for t in i["tools"]]
            name = next((n for n in loaded if "create_refund" in n), loaded[0] if loaded else "none")
            out = {"type": "function_call", "id": "fc_1", "call_id": "call_fn_1", "name": name,
                   "arguments": json.dumps({"payment_intent": "pi_3MtwBw"}), "status": "completed"}
        return httpx.Response(200, json={
            "id": f"resp_{len(self.bodies)}", "object": "response", "created_at": 1767225600, "model": body["model"],
            "status": "completed", "output": [out], "parallel_tool_calls": True, "tool_choice": "auto", "tools": []})


def test_the_responses_api_loads_camdfs_set_and_the_model_calls_a_found_tool(default_policy, camdf_set):
    model = ScriptedResponses(ASK)
    client = openai.OpenAI(api_key="test", base_url="http://test",
                           http_client=httpx.Client(transport=httpx.MockTransport(model)))
    search = ClientToolSearch(default_policy, preload=PRELOAD)
    tools = search.prepare(SAAS)
    history: list = [{"role": "user", "content": ASK}]
    first = client.responses.create(model="gpt-5.4", input=history, tools=tools)
    call = first.output[0]
    assert isinstance(call, ResponseToolSearchCall) and call.execution == "client"
    answer = search.output(call, SAAS)  # the SDK's own object
    history += [call, answer]
    second = client.responses.create(model="gpt-5.4", input=history, tools=tools)

    # What the SDK sent: the client tool_search tool, the preload loaded, every other tool deferred.
    sent = model.bodies[0]["tools"]
    assert sent[0] == {"type": "tool_search", "execution": "client", "description": search.description,
                       "parameters": search.definition()["parameters"]}
    functions = {t["name"]: t for t in sent[1:]}
    assert len(sent) == len(SAAS) + 1 and set(functions) == {t["name"] for t in SAAS}
    assert {n for n, t in functions.items() if "defer_loading" not in t} == set(PRELOAD)
    assert all(t["defer_loading"] is True for n, t in functions.items() if n not in PRELOAD)
    assert functions["stripe_create_refund"]["parameters"] == SAAS[[t["name"] for t in SAAS].index(
        "stripe_create_refund")]["parameters"]
    # The answer the SDK sent back: the call echoed, then camdf's set for the model's query, same call_id.
    echoed, output = model.bodies[1]["input"][1:]
    assert echoed["type"] == "tool_search_call" and echoed["call_id"] == "call_search_1"
    assert output["type"] == "tool_search_output" and output["call_id"] == "call_search_1"
    assert output["execution"] == "client" and output["status"] == "completed"
    assert [t["name"] for t in output["tools"]] == list(camdf_set)
    assert all(t["defer_loading"] is True and t == functions[t["name"]] for t in output["tools"])
    # The model then called a tool the search loaded.
    called = second.output[0]
    assert isinstance(called, ResponseFunctionToolCall) and called.name == "stripe_create_refund"


def test_the_output_item_and_the_tool_have_the_sdks_shapes(default_policy):
    search = ClientToolSearch(default_policy, preload=PRELOAD, max_results=3)
    item = search.output({"type": "tool_search_call", "id": "tsc_1", "call_id": "c1", "execution": "client",
                          "status": "completed", "arguments": json.dumps({"query": ASK})}, SAAS)
    assert len(item["tools"]) == 3  # max_results caps the set
    TypeAdapter(ResponseInputItemParam).validate_python(item)  # an input item of the request
    assert set(item) <= _keys(ResponseToolSearchOutputItemParamParam)
    assert all(set(t) <= _keys(FunctionToolParam) for t in item["tools"])
    parsed = ResponseToolSearchOutputItemParam.model_validate(item)
    assert parsed.call_id == "c1" and [t.type for t in parsed.tools] == ["function"] * 3
    assert all(t.defer_loading for t in parsed.tools)
    tool = search.definition()
    TypeAdapter(ToolParam).validate_python(tool)
    assert set(tool) <= _keys(ToolSearchToolParam) and tool["execution"] == "client"


def test_the_answer_is_the_policys_own_selection(policy_dir, expected):
    """With no preload, the answer to the task's query is exactly the fitted policy's selection (conftest)."""
    tools = [{"type": "function", "name": t["name"], "description": t["description"],
              "parameters": t["parameters"], "strict": False} for t in CATALOG]
    item = ClientToolSearch(str(policy_dir), lam=LAM).output(
        {"type": "tool_search_call", "call_id": "c9", "execution": "client", "arguments": {"query": QUERY}}, tools)
    assert sorted(t["name"] for t in item["tools"]) == sorted(expected)


def test_a_broken_policy_loads_every_deferred_tool_with_one_warning():
    search = ClientToolSearch(Broken(), preload=PRELOAD)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        item = search.output({"type": "tool_search_call", "call_id": "c1", "execution": "client",
                              "arguments": {"query": ASK}}, SAAS)
    fail_open = [w for w in caught if issubclass(w.category, FailOpenWarning)]
    assert len(fail_open) == 1 and "policy exploded" in str(fail_open[0].message)
    assert [t["name"] for t in item["tools"]] == [t["name"] for t in SAAS if t["name"] not in PRELOAD]


def test_prepare_passes_other_tools_through_and_takes_its_own_list():
    search = ClientToolSearch(Broken(), preload=["get_order"], always_include=["get_weather"])
    tools = [{"type": "web_search"}, {"type": "custom", "name": "run_sql", "description": "Run a SQL query."}] + [
        {"type": "function", "name": t["name"], "description": t["description"], "parameters": t["parameters"],
         "strict": False, **({"defer_loading": True} if t["name"] == "get_order" else {})} for t in CATALOG]
    prepared = search.prepare(tools)
    assert prepared[0] == search.definition() and prepared[1] == {"type": "web_search"}
    assert prepared[2] == {**tools[1], "defer_loading": True}  # a custom tool is deferred (and searched) too
    loaded = [t["name"] for t in prepared[3:] if "defer_loading" not in t]
    assert loaded == ["get_order", "get_weather"]  # a preloaded tool's own defer_loading is dropped
    assert search.prepare(prepared) == prepared  # its own list: the search tool is not added twice
    everything = ClientToolSearch(Broken(), preload=[t["name"] for t in CATALOG])
    # Nothing to defer, so no search tool: every tool loaded as given (the API's search needs something to search).
    assert everything.prepare(tools[2:]) == [{k: v for k, v in t.items() if k != "defer_loading"} for t in tools[2:]]


def test_a_query_that_is_not_a_string_finds_nothing(default_policy):
    search = ClientToolSearch(default_policy)
    for arguments in ({"query": 7}, {}, "not json", None, ["refund"]):
        item = search.output({"type": "tool_search_call", "call_id": "c1", "execution": "client",
                              "arguments": arguments}, SAAS)
        assert item["tools"] == [] and item["call_id"] == "c1"


CALL = {"type": "tool_search_call", "call_id": "c1", "execution": "client", "arguments": {"query": "refund"}}


@pytest.mark.parametrize("call, tools, match", [
    ({**CALL, "execution": "server"}, SAAS, r"call: execution is 'server'"),
    ({**CALL, "call_id": None}, SAAS, r"call: expected a non-empty call_id"),
    ({**CALL, "type": "function_call"}, SAAS, r"call: expected a tool_search_call item, got type 'function_call'"),
    (object(), SAAS, r"call: expected a tool_search_call \(a dict or the SDK's ResponseToolSearchCall\)"),
    (CALL, SAAS[0], r"tools: expected a list of Responses API tools, got dict"),
    (CALL, ["get_order"], r"tools\[0\]: expected a Responses API tool"),
    (CALL, [{"type": "function", "function": {"name": "get_order"}}], r"tools\[0\]: a Chat Completions tool"),
    (CALL, [{"type": "function", "description": "no name"}], r"tools\[0\]: expected a function tool with a non-emp"),
    (CALL, SAAS[:2] + SAAS[:1], r"tools\[2\]: the name 'slack_list_message' is also tools\[0\]'s"),
    (CALL, [{"type": "tool_search"}] + SAAS, r"tools\[0\]: a tool_search tool is already there"),
    (CALL, SAAS[5:], r"preload/always_include: \['slack_create_message'\] are not among the tools"),
])
def test_wrong_input_is_refused_naming_what_is_wrong(call, tools, match):
    with pytest.raises(ValueError, match=match):
        ClientToolSearch(Broken(), preload=["slack_create_message"]).output(call, tools)


@pytest.mark.parametrize("kwargs, match", [
    ({"preload": "slack_create_message"}, r"preload: expected a list of tool names"),
    ({"max_results": 0}, r"max_results: expected an integer >= 1 or None, got 0"),
    ({"description": ""}, r"description: expected a non-empty string"),
])
def test_wrong_options_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ClientToolSearch(Broken(), **kwargs)


# -- the Agents SDK -----------------------------------------------------------------------------------------------

def _function_tools(calls: list) -> list[FunctionTool]:
    def make(spec):
        async def invoke(context, arguments: str) -> str:
            calls.append((spec["name"], json.loads(arguments)))
            return f"{spec['name']}: done"
        return FunctionTool(name=spec["name"], description=spec["description"], params_json_schema=spec["parameters"],
                            on_invoke_tool=invoke, strict_json_schema=False)
    return [make(s) for s in SAAS]


def _message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


class SearchingModel(Model):
    """A model (the SDK's Model interface) that searches with ``query``, then calls a tool the search loaded (one
    named for a refund, if it was loaded), then answers; it records the tools of each turn."""

    def __init__(self, query: str):
        self.query, self.seen = query, []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, **kwargs):
        self.seen.append(sorted(t.name for t in tools))
        turn = len(self.seen)
        if turn == 1:
            out = ResponseFunctionToolCall(type="function_call", call_id="s1", name=SEARCH_TOOL,
                                           arguments=json.dumps({"query": self.query}))
        elif turn == 2:
            new = [n for n in (t.name for t in tools) if n not in self.seen[0]]
            name = next((n for n in new if "create_refund" in n), new[0] if new else SEARCH_TOOL)
            out = ResponseFunctionToolCall(type="function_call", call_id="f1", name=name,
                                           arguments=json.dumps({"payment_intent": "pi_3MtwBw"}))
        else:
            out = _message("refunded")
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


def test_the_agents_search_tool_loads_camdfs_set_and_the_model_calls_a_found_tool(default_policy, camdf_set):
    calls: list = []
    flt = CamdfToolFilter(default_policy, preload=PRELOAD)
    model = SearchingModel(ASK)
    agent = Agent(name="ops", model=model, tools=flt.enable(_function_tools(calls)))
    result = asyncio.run(Runner.run(agent, "Please help with this customer: " + ASK))
    assert result.final_output == "refunded"
    first = sorted({*PRELOAD, SEARCH_TOOL})
    assert model.seen[0] == first  # the run starts with the preload and the search tool, no decision over it
    assert model.seen[1] == model.seen[2] == sorted({*first, *camdf_set})  # what the search loaded, from then on
    assert any(getattr(i, "output", None) == "Loaded: " + ", ".join(camdf_set) for i in result.new_items)
    assert calls == [("stripe_create_refund", {"payment_intent": "pi_3MtwBw"})]  # a tool camdf's search loaded
    # A second run starts from the preload again.
    model.seen = []
    asyncio.run(Runner.run(agent, ASK))
    assert model.seen[0] == first


def test_the_agents_search_fails_open_with_one_warning():
    calls: list = []
    flt = CamdfToolFilter(Broken(), preload=PRELOAD)
    model = SearchingModel(ASK)
    agent = Agent(name="ops", model=model, tools=flt.enable(_function_tools(calls)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(Runner.run(agent, ASK))
    fail_open = [w for w in caught if issubclass(w.category, FailOpenWarning)]
    assert len(fail_open) == 1 and "policy exploded" in str(fail_open[0].message)
    assert model.seen[0] == sorted({*PRELOAD, SEARCH_TOOL})
    assert model.seen[1] == sorted({*(t["name"] for t in SAAS), SEARCH_TOOL})  # every tool loaded
    assert len(calls) == 1


def test_defer_gives_openais_hosted_search_the_rest_and_keeps_the_preload_loaded():
    """The SDK's own Responses model serialises the deferred tools and the hosted tool_search; camdf's preload is
    loaded. The model behind the transport answers at once."""
    bodies = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={
            "id": "resp_1", "object": "response", "created_at": 1767225600, "model": "gpt-5.4", "status": "completed",
            "output": [_message("ok").model_dump()], "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": []})

    async def go():
        client = openai.AsyncOpenAI(api_key="test", base_url="http://test",
                                    http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
        flt = CamdfToolFilter(Broken(), preload=PRELOAD)
        given = _function_tools([])
        tools = flt.defer(given)
        assert not any(t.defer_loading for t in given)  # the caller's tools are not changed
        agent = Agent(name="ops", model=OpenAIResponsesModel("gpt-5.4", client), tools=tools)
        return await Runner.run(agent, ASK)

    assert asyncio.run(go()).final_output == "ok"
    sent = bodies[0]["tools"]
    assert [t for t in sent if t["type"] == "tool_search"] == [{"type": "tool_search"}]  # hosted: the API searches
    functions = {t["name"]: t for t in sent if t["type"] == "function"}
    assert set(functions) == {t["name"] for t in SAAS}
    assert {n for n, t in functions.items() if not t.get("defer_loading")} == set(PRELOAD)
    with pytest.raises(ValueError, match="tools: a ToolSearchTool is already there"):
        CamdfToolFilter(Broken(), preload=PRELOAD).defer(_function_tools([]) + [ToolSearchTool()])


def test_the_sdks_runner_refuses_a_client_tool_search_call():
    """Why camdf is not the Responses API's client tool_search inside ``Runner.run`` (the module docstring): the
    runner raises on a client-executed tool_search_call. Should an SDK release answer it, this test says so."""

    class ClientSearchModel(Model):
        async def get_response(self, *args, **kwargs):
            call = ResponseToolSearchCall(id="tsc_1", type="tool_search_call", call_id="c1", execution="client",
                                          status="completed", arguments={"query": ASK})
            return ModelResponse(output=[call], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    deferred = CamdfToolFilter(Broken(), preload=PRELOAD).defer(_function_tools([]))[:-1]
    agent = Agent(name="ops", model=ClientSearchModel(), tools=deferred + [ToolSearchTool(execution="client")])
    with pytest.raises(ModelBehaviorError, match="Handle the tool_search_call yourself"):
        asyncio.run(Runner.run(agent, ASK))


@pytest.mark.parametrize("kwargs, match", [
    ({"preload": "slack_create_message"}, r"preload: expected a list of tool names or None"),
    ({"preload": ["ok", ""]}, r"preload: expected a list of tool names or None"),
    ({"preload": [], "max_results": -1}, r"max_results: expected an integer >= 1 or None, got -1"),
])
def test_the_filters_wrong_options_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CamdfToolFilter(Broken(), **kwargs)


def test_the_agents_search_is_capped_by_max_results(default_policy, camdf_set):
    model = SearchingModel(ASK)
    agent = Agent(name="ops", model=model,
                  tools=CamdfToolFilter(default_policy, preload=PRELOAD, max_results=2).enable(_function_tools([])))
    asyncio.run(Runner.run(agent, ASK))
    assert model.seen[1] == sorted({*PRELOAD, SEARCH_TOOL, *camdf_set[:2]})  # the policy's best-ranked two
