"""The tables, one module per table (or per closely related group), found by folder.

Every module here declares ``SPECS``, the :class:`~camdf.reporting.tables.base.TableSpec` it
builds (a helper module: ``SPECS = ()``); :func:`camdf.reporting.registry.tables` reads them.
"""
