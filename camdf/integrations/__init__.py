"""Everything that knows an outside benchmark package: one package per integration, found by folder.

Each package declares what it offers in its ``__init__.py`` (:mod:`camdf.integrations.base`);
:mod:`camdf.integrations.registry` discovers them.
"""
