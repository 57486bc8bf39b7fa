import json
import sys

from smartcomment import comment_graph, comment_op_scope, comment_session
from smartcomment.runtime.network import ExecNetwork

fx = sys.argv[1]
out = {}
g = ExecNetwork.import_graph(json.load(open(f"{fx}/sc012_toy_evaluation.json")))
ops = g.get_all_operations()
def ids(rg):
    return [sorted(n.full_node_id for n in rg.nodes), sorted(e.edge_id for e in rg.edges), sorted(o.op_id for o in rg.ops)]
for i in range(len(ops)-1):
    a = g.filter_by_operation(ops[i].op_id); b = g.filter_by_operation(ops[i+1].op_id)
    u = a | b
    c = g.filter_by_operation([ops[i].op_id, ops[i+1].op_id])
    for name, r in [("and", a & c), ("or", u), ("sub", c - a), ("xor", c ^ b), ("sub2", u - b)]:
        out[f"{i}:{name}"] = ids(r)
    out[f"{i}:cmp"] = [a <= c, c >= a, a < c, a == a, a.issubset(b), c > b]
# closure/bfs/ancestors
n = g.search_variables(class_name="judge_score")[0].full_node_id
q = g.get_latest_variable("query:locomo-qa-1-2").full_node_id
out["anc"] = [v.full_node_id for v in g.get_ancestors(q)]
out["desc"] = sorted(v.full_node_id for v in g.get_descendants(q))
out["anc_d1"] = sorted(v.full_node_id for v in g.get_ancestors(n, max_depth=1))
for d in ["forward", "backward", "both"]:
    for sib in [False, True]:
        r = g.bfs(q, direction=d, max_depth=2, include_sibling_inputs=sib)
        out[f"bfs:{d}:{sib}"] = ids(r)
out["bfs_cat"] = ids(g.bfs(q, direction="forward", categories=["llm_response"]))
out["roots"] = sorted(v.full_node_id for v in g.get_root_nodes())
out["leaves"] = sorted(v.full_node_id for v in g.get_leaf_nodes())
out["sessions_contrib"] = [s.session_id for s in g.contributing_sessions(n)][:1] and len(g.contributing_sessions(n))
out["downstream"] = len(g.get_downstream_sessions(q))
out["opsubs"] = sorted(json.dumps(ids(v)) for v in g.get_operation_subgraphs("memory-unit-00000000-0000-0000-0000-000000000001"))
cs = g.get_child_subgraphs(q.rsplit("@",1)[0]); out["childsubs"] = [type(cs).__name__, len(cs), type(cs[0]).__name__ if cs else None, sorted(json.dumps(ids(x)) for x in cs) if cs and not isinstance(cs[0], list) else None]
out["by_session"] = ids(g.filter_by_session(g.get_all_sessions()[1].session_id))
out["by_cat"] = ids(g.filter_by_category(["prompt", "llm_response"]))
tr = g.time_range(); out["tr"] = [tr[0] <= tr[1]]
mid = sorted(v.created_at for v in g.get_all_nodes())[25]
out["by_time"] = ids(g.filter_by_time(end=mid))
out["by_time_ex"] = ids(g.filter_by_time(end=mid, exclude=True))
out["induced"] = ids(g.induced_subgraph([v.full_node_id for v in g.get_all_nodes()[:20]] + ["missing@1"]))
out["search_ops"] = [o.op_name for o in g.search_operations(name_pattern="memory_system")]
out["search_vars"] = [v.full_node_id for v in g.search_variables(name_pattern="^memory-unit", category="memory_entry")]
out["search_edges"] = len(g.search_edges(category="operation"))
out["versions"] = [v.full_node_id for v in g.get_versions("memory-unit-00000000-0000-0000-0000-000000000001")]
out["ops_by_var"] = [o.op_name for o in g.get_operations_by_variable("memory-unit-00000000-0000-0000-0000-000000000001@1")]
# empty-op rendering
with comment_graph() as h:
    with comment_session():
        with comment_op_scope(op_name="lonely"):
            pass
lonely = h.get_all_operations()[0]
sub = h.filter_by_operation(lonely.op_id)
out["lonely"] = [len(sub.nodes), len(sub.edges), len(sub.ops), sub.to_xml().replace(lonely.op_id, "OP").split("created in")[0], sub.to_markdown().replace(lonely.op_id, "OP").split("Created At")[0]]
out["unknown_op"] = ids(g.filter_by_operation("op-nope"))
json.dump(out, open(sys.argv[2], "w"), indent=1, sort_keys=True)
