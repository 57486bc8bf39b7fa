"""Black-box probe: render fixture subgraphs with a smartcomment implementation and dump the text.

Runs unchanged against the reference package (in a separate venv) and against ours.
"""
import json
import sys

from smartcomment.runtime.network import ExecNetwork

fx = sys.argv[1]
out = {}
for name in ["sc012_toy_evaluation.json", "sc012_edge_cases.json"]:
    g = ExecNetwork.import_graph(json.load(open(f"{fx}/{name}")))
    ops = g.get_all_operations()
    for i, op in enumerate(ops[:12]):
        sub = g.filter_by_operation(op.op_id)
        # order deterministically as MemTrace tools do
        from smartcomment.runtime.graph import RuntimeGraph
        sub = RuntimeGraph(nodes=sorted(sub.nodes, key=lambda n: (n.created_at, n.full_node_id)),
                           edges=sorted(sub.edges, key=lambda e: (e.created_at, e.edge_id)),
                           ops=sorted(sub.ops, key=lambda o: (o.created_at, o.op_id)))
        out[f"{name}:{i}:xml"] = sub.to_xml()
        out[f"{name}:{i}:xml_meta"] = sub.to_xml(include_metadata=True)
        out[f"{name}:{i}:xml_noval"] = sub.to_xml(include_variable_value=False)
        out[f"{name}:{i}:md"] = sub.to_markdown()
        out[f"{name}:{i}:md_meta"] = sub.to_markdown(include_metadata=True, include_variable_value=False)
    for j, n in enumerate(g.get_all_nodes()[:40]):
        out[f"{name}:node{j}:xml"] = n.to_xml()
        out[f"{name}:node{j}:xml_meta"] = n.to_xml(include_metadata=True)
        out[f"{name}:node{j}:md"] = n.to_markdown(include_metadata=True)
        out[f"{name}:node{j}:repr"] = repr(n)
    for j, e in enumerate(g.get_all_edges()[:10]):
        out[f"{name}:edge{j}:xml"] = e.to_xml(include_metadata=True)
        out[f"{name}:edge{j}:md"] = e.to_markdown(include_metadata=True)
    for j, s in enumerate(g.get_all_sessions()):
        out[f"{name}:session{j}:xml"] = s.to_xml(include_metadata=True)
        out[f"{name}:session{j}:md"] = s.to_markdown(include_metadata=True)
        out[f"{name}:session{j}:xml_nometa"] = s.to_xml()
    for j, o in enumerate(ops):
        out[f"{name}:op{j}:xml"] = o.to_xml(include_metadata=True)
        out[f"{name}:op{j}:md"] = o.to_markdown()
    full = g.to_runtime_graph()
    out[f"{name}:full:xml"] = full.to_xml()
    out[f"{name}:full:md"] = full.to_markdown()
    out[f"{name}:repr"] = repr(full)
from smartcomment.runtime.graph import RuntimeGraph

out["empty:xml"] = RuntimeGraph(nodes=[], edges=[], ops=[]).to_xml()
out["empty:md"] = RuntimeGraph(nodes=[], edges=[], ops=[]).to_markdown()
json.dump(out, open(sys.argv[2], "w"), indent=1, ensure_ascii=False)
print(len(out))
