"""Import blocks that name only what a generated module uses, so generated code lints clean."""

from __future__ import annotations

import re

#: Groups (stdlib, third party, first party) of module -> names a renderer may need.
ImportGroups = tuple[dict[str, tuple[str, ...]], ...]


def import_block(body: str, groups: ImportGroups, *, postponed_annotations: bool = True) -> str:
    """``from m import a, b`` lines for the names ``body`` mentions, one blank line between groups.

    FastAPI reads route signatures at runtime, and a postponed annotation naming a
    closure variable (``Depends(authorize(...))``) cannot be resolved later, so route
    modules opt out of ``from __future__ import annotations``.
    """
    blocks = ["from __future__ import annotations"] if postponed_annotations else []
    for group in groups:
        lines = []
        for module, names in group.items():
            used = [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}\b", body)]
            if used:
                lines.append(f"from {module} import {', '.join(used)}")
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
