"""Domains: the task-format model, its reader/validator/writer and the converters."""

from camdf.data.io import DomainFormatError, read_domain, write_domain
from camdf.data.model import Domain, Task, Tool

__all__ = ["Domain", "DomainFormatError", "Task", "Tool", "read_domain", "write_domain"]
