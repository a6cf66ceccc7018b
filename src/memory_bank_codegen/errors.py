"""What the generator says when a spec is unusable: where, which rule, why.

Every refusal names the operation (its operationId, ``METHOD /path``, or ``spec`` for the
document as a whole) and a rule a reader can search for, so a failing ``regenerate-tools``
says exactly what to fix and never ends in a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CodegenError", "SpecIssue"]


@dataclass(frozen=True)
class SpecIssue:
    """One broken rule: where (operationId, ``METHOD /path`` or ``spec``), which rule, why."""

    operation: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.operation}: {self.rule}: {self.message}"


class CodegenError(Exception):
    """The spec cannot be turned into code; carries every issue found, in spec order."""

    def __init__(self, *issues: SpecIssue) -> None:
        super().__init__("\n".join(map(str, issues)))
        self.issues = issues

    @classmethod
    def at(cls, operation: str, rule: str, message: str) -> CodegenError:
        return cls(SpecIssue(operation, rule, message))

    def within(self, operation: str) -> CodegenError:
        """The same issues, those not yet placed (``spec``) placed on ``operation``."""
        return CodegenError(
            *(SpecIssue(operation, i.rule, i.message) if i.operation == "spec" else i for i in self.issues)
        )
