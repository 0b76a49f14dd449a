"""The asset graph as a Mermaid diagram, drawn from the definitions themselves.

The README embeds the diagram this module prints (``python -m civicsetu_pipelines.defs.diagram``);
a test keeps the two equal, so the picture cannot drift from the code.
"""

from __future__ import annotations

import dagster as dg

# The order the groups are drawn in: the order data flows.
GROUP_ORDER = ("raw", "core", "out", "evaluation")


def asset_graph_mermaid(definitions: dg.Definitions) -> str:
    """A Mermaid ``flowchart`` of every asset (by group, with its checks' count) and its edges."""
    graph = definitions.resolve_asset_graph()
    keys = sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string())
    groups: dict[str, list[dg.AssetKey]] = {}
    for key in keys:
        groups.setdefault(graph.get(key).group_name or "default", []).append(key)
    order = [g for g in GROUP_ORDER if g in groups] + sorted(set(groups) - set(GROUP_ORDER))
    lines = ["flowchart LR"]
    for group in order:
        lines.append(f"  subgraph {group}")
        for key in groups[group]:
            name = key.to_user_string()
            checks = len(graph.get(key).check_keys)
            noun = "check" if checks == 1 else "checks"
            suffix = f"<br/><small>{checks} {noun}</small>" if checks else ""
            lines.append(f'    {name}["{name}{suffix}"]')
        lines.append("  end")
    for key in keys:
        for parent in sorted(graph.get(key).parent_keys, key=lambda k: k.to_user_string()):
            lines.append(f"  {parent.to_user_string()} --> {key.to_user_string()}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from civicsetu_pipelines.defs import build_definitions

    print(asset_graph_mermaid(build_definitions()), end="")
