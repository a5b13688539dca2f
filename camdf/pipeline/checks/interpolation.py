"""What an interpolation may do to a config before the gates (:mod:`camdf.pipeline.checks.gates`) see it.

- :func:`calls_node_resolver`: whether a value calls a resolver that makes a config node from a string
  (:data:`NODE_RESOLVERS`: ``${oc.create:{_target_: ...}}``), escaped, nested or with an interpolated name; such a
  node would reach Hydra's ``instantiate`` after the gates had seen only a string, so the gates refuse the value.
- :func:`check_expansion`: a value whose interpolations would grow past :data:`MAX_EXPANDED` characters once
  resolved (a key that repeats the one above it nine times, ten keys deep: 9**10 characters) is refused before
  anything resolves it, by counting, not by resolving.
- :func:`resolved_now` and :func:`as_hydra_runs`: the composed config as Hydra will start it (its job number and id
  and ``hydra.runtime.output_dir`` set), with every value resolved that resolves before Hydra starts, so the gates
  check the tree Hydra instantiates and the files it writes, not only the text of the config.
"""

from __future__ import annotations

import os
import re
from typing import Any

#: Resolvers that make a config node from a string (``${oc.create:{_target_: ...}}``): the node would reach
#: Hydra's ``instantiate`` after the gates had seen only a string, so no config value calls them. camdf's own
#: resolvers (:mod:`camdf.pipeline.resolvers`) return strings.
NODE_RESOLVERS = ("oc.create", "oc.decode")
NO_NODE_RESOLVER = ("a value that calls no node-making resolver (" + ", ".join(NODE_RESOLVERS) + ", escaped or "
                     "nested, nor a resolver whose name is interpolated): the node it makes would be instantiated "
                     "unchecked; write the node itself in the config")

#: An ``oc.decode`` of one plain interpolation (``${oc.decode:${oc.env:X}}``, a number from the environment) makes
#: no node the config wrote; what it decodes is checked after resolution like every other value.
_ONE_INTERPOLATION = re.compile(r"\$\{[^${}]*\}")


def _resolver_names(text: str) -> list[str]:
    """The resolvers ``text`` calls, nested ones included, and those it would call once unescaped (OmegaConf's
    ``resolve``, which Hydra's ``instantiate`` runs, turns ``\\${x:...}`` into ``${x:...}``); an interpolated
    name reads as written (``${a}.create``)."""
    from omegaconf.grammar.gen.OmegaConfGrammarParser import OmegaConfGrammarParser
    from omegaconf.grammar_parser import parse

    names: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, OmegaConfGrammarParser.ResolverNameContext):
            call = node.parentCtx.getText()
            argument = call[len("${oc.decode:"):-1].strip().strip("'\"")
            if node.getText() != "oc.decode" or not _ONE_INTERPOLATION.fullmatch(argument):
                names.append(node.getText())
        for child in node.getChildren() if hasattr(node, "getChildren") else ():
            walk(child)

    for variant in {text, text.replace("\\${", "${")}:
        try:
            walk(parse(variant, parser_rule="configValue", lexer_mode="DEFAULT_MODE"))
        except Exception:  # noqa: BLE001  not an interpolation OmegaConf can parse: it never resolves
            continue
    return names


def calls_node_resolver(value: Any) -> bool:
    """Whether a string (or any string inside a container) calls a resolver of :data:`NODE_RESOLVERS` or one whose
    name is interpolated."""
    value = getattr(value, "text", value)  # a quoted sweep value of an override (Hydra's QuotedString)
    if isinstance(value, dict):
        return any(calls_node_resolver(v) for v in value.values())
    if isinstance(value, list):
        return any(calls_node_resolver(v) for v in value)
    if not isinstance(value, str) or "${" not in value:
        return False
    return any(n in NODE_RESOLVERS or "${" in n for n in _resolver_names(value))


#: The most characters one config value may resolve to (a path, a list of overrides, a prompt: far less).
MAX_EXPANDED = 1_000_000
#: A plain node interpolation, absolute (``${a.b}``) or relative (``${..a}``), also inside a resolver's arguments,
#: and the key ``oc.select`` reads (``${oc.select:a.b,default}``).
_REFERENCE = re.compile(r"\$\{\s*(?:oc\.select\s*:\s*)?(\.*[A-Za-z_][\w\-]*(?:\.[\w\-]+)*)\s*[,}]")


def check_expansion(raw: Any, limit: int = MAX_EXPANDED) -> None:
    """Refuse a config (a plain container, interpolations unresolved) with a value whose interpolations would
    resolve to more than ``limit`` characters: each value's size is its own text plus, for every reference it
    makes, the size of what it references (memoised, so the count costs one visit per value, whatever the
    expansion). :class:`~camdf.pipeline.checks.errors.ConfigError` names the first such key."""
    from camdf.pipeline.checks.errors import ConfigError

    memo: dict[tuple, int] = {}

    def at(path: tuple) -> Any:
        node = raw
        for part in path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and str(part).isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def target(path: tuple, ref: str) -> tuple:
        dots = len(ref) - len(ref.lstrip("."))
        if not dots:
            return tuple(ref.split("."))
        base = path[:-1][: max(0, len(path) - dots)]  # ${.x}: a sibling; each further dot, one level up
        return (*base, *ref.lstrip(".").split("."))

    def size(path: tuple, visiting: frozenset) -> int:
        if path in memo:
            return memo[path]
        if path in visiting:  # a cycle: OmegaConf refuses it when it resolves; nothing to count here
            return 0
        node = at(path)
        if isinstance(node, dict):
            total = sum(size((*path, k), visiting | {path}) for k in node)
        elif isinstance(node, list):
            total = sum(size((*path, str(i)), visiting | {path}) for i in range(len(node)))
        else:
            text = "" if node is None else str(node)
            total = len(text)
            for ref in _REFERENCE.findall(text) if "${" in text else ():
                total += size(target(path, ref), visiting | {path})
                if total > limit:
                    break
        memo[path] = min(total, limit + 1)
        return memo[path]

    def walk(node: Any, path: tuple) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            here = (*path, str(k))
            if isinstance(v, (dict, list)):
                walk(v, here)
            elif isinstance(v, str) and "${" in v and size(here, frozenset()) > limit:
                shown = v if len(v) <= 80 else f"{v[:80]}... ({len(v)} characters)"
                raise ConfigError(".".join(here), shown, f"a value that resolves to at most {limit:,} characters "
                                                         "(its interpolations repeat others until it would be larger)")

    walk(raw, ())


def resolved_now(node: Any) -> Any:
    """A plain copy of a config with every value resolved that resolves before Hydra starts; any other value
    (a Hydra runtime value this config does not supply) kept as written."""
    from omegaconf import Container, OmegaConf

    if not isinstance(node, Container):
        return node
    keys = list(node.keys()) if OmegaConf.is_dict(node) else range(len(node))
    out = {k: None for k in keys} if OmegaConf.is_dict(node) else [None] * len(node)
    for k in keys:
        try:
            value = node[k]
        except Exception:  # noqa: BLE001  not resolvable here: kept as written, the gates see the text
            child = node._get_node(k)
            value = child._value() if not isinstance(child, Container) or child._is_interpolation() else child
        out[k] = resolved_now(value) if isinstance(value, Container) else value
    return out


def as_hydra_runs(cfg: Any, multirun: bool) -> Any:
    """A copy of the composed config with the values Hydra sets when it starts: the job's number and id, and
    ``hydra.runtime.output_dir`` (the run folder, or the first job's folder of a sweep)."""
    import copy

    from omegaconf import OmegaConf, open_dict

    ctx = copy.deepcopy(cfg)
    if "hydra" not in ctx or not OmegaConf.is_dict(ctx.hydra.get("job")):
        return ctx
    OmegaConf.set_readonly(ctx, False)
    with open_dict(ctx):
        for key, value in (("num", 0), ("id", "0")):
            if key not in ctx.hydra.job or OmegaConf.is_missing(ctx.hydra.job, key):
                ctx.hydra.job[key] = value

        def select(key: str) -> Any:
            return OmegaConf.select(ctx, key, default=None, throw_on_resolution_failure=False)

        run = select("hydra.sweep.dir") if multirun else select("hydra.run.dir")
        sub = select("hydra.sweep.subdir") if multirun else ""
        if isinstance(run, str) and sub is not None:
            OmegaConf.update(ctx, "hydra.runtime.output_dir", os.path.abspath(os.path.join(run, str(sub))),
                             merge=False)
    return ctx
