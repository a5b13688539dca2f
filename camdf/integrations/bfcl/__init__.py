"""BFCL multi-turn: conversion of its tasks and function docs into the task format."""

from camdf.integrations.base import Integration

#: What this package offers (read by :mod:`camdf.integrations.registry`).
INTEGRATION = Integration(converters=("convert:convert_multi_turn",))
