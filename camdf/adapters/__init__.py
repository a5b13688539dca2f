"""Harness adapters: one thin module per harness (LangChain, MCP, OpenAI Agents SDK, Anthropic tool search).

Each translates the harness's tool objects into plain tool descriptions, asks a
:class:`camdf.runtime.toolset.ToolChooser` (where every decision and the fail-open rule live) and
translates the answer back. A module imports its harness's library itself, so the core and the
slim runtime install need none of them: import the module of the harness you use
(``from camdf.adapters.langchain import CamdfToolSelector``). docs/harness.md has an example of each.
"""
