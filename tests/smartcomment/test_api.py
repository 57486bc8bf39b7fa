"""Behaviour of each recording API function (spec-tracer-and-membase §1)."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from smartcomment import (
    IdentityRegistry,
    TraceConsistencyError,
    comment_fn,
    comment_graph,
    comment_link,
    comment_mutation,
    comment_op,
    comment_op_scope,
    comment_session,
    comment_variable,
    current_context,
    current_graph,
    current_op,
    current_session,
    disable_tracing,
    enable_tracing,
    is_tracing_enabled,
    propagate_attributes,
    tracing_enabled,
)
from smartcomment.runtime import RuntimeVariable


@pytest.fixture(autouse=True)
def _tracing_on():
    enable_tracing()
    yield
    enable_tracing()


# ---------------------------------------------------------------- disabled / no graph
def test_disabled_tracing_records_nothing_and_returns_inputs() -> None:
    with tracing_enabled(False):
        assert not is_tracing_enabled()
        with comment_graph() as graph:
            assert graph is None
            assert comment_variable("x") == "x"
            assert comment_op(inputs=["a"], outputs=["b"], op_name="op") is None
            assert comment_link(source="a", target="b") is None
            with comment_mutation(target=[1]) as scope:
                pass
            assert scope.result is None
            with comment_session() as session, comment_op_scope(op_name="s") as op:
                assert session is None and op is None
    assert is_tracing_enabled()


def test_process_wide_switch_returns_previous_state() -> None:
    assert disable_tracing() is True
    assert not is_tracing_enabled()
    assert enable_tracing() is False


def test_scoped_switch_restores_previous_state_even_on_error() -> None:
    with pytest.raises(ZeroDivisionError), tracing_enabled(False):
        1 / 0  # noqa: B018
    assert is_tracing_enabled()


@pytest.mark.parametrize(
    "call",
    [
        lambda: comment_variable("x"),
        lambda: comment_op(inputs=["a"], outputs=["b"], op_name="op"),
        lambda: comment_link(source="a", target="b"),
        lambda: comment_mutation(target=[1]).__enter__(),
        lambda: comment_session().__enter__(),
        lambda: comment_op_scope(op_name="x").__enter__(),
    ],
)
def test_recording_without_graph_raises_clear_error(call) -> None:
    with pytest.raises(RuntimeError, match="active graph"):
        call()


def test_comment_fn_without_graph_calls_through() -> None:
    @comment_fn()
    def double(x: int) -> int:
        return 2 * x

    assert double(4) == 8


# ---------------------------------------------------------------- node resolution
def test_strings_are_stored_with_repr_and_named_by_content_hash() -> None:
    with comment_graph() as g:
        rv = comment_variable("7 May 2023", to_runtime=True)
    assert rv.full_node_id == "str:af4a71b51f7bde08dc7106e76025607d2a259159@1"
    assert rv.raw_value == "'7 May 2023'"
    assert g.get_variable(rv.full_node_id).session_id == "__none__"


def test_equal_value_reuses_node_and_changed_value_adds_version() -> None:
    with comment_graph() as g, comment_session(session_id="s"):
        a = comment_variable("v1", to_runtime=True, id_strategy=lambda _: "counter")
        b = comment_variable("v1", to_runtime=True, id_strategy=lambda _: "counter")
        c = comment_variable("v2", to_runtime=True, id_strategy=lambda _: "counter")
    assert a.full_node_id == b.full_node_id == "counter@1"
    assert c.full_node_id == "counter@2"
    assert [v.raw_value for v in g.get_versions("counter")] == ["'v1'", "'v2'"]
    assert g.get_latest_variable("counter").version == 2


def test_strict_graph_rejects_changed_value_under_same_identity() -> None:
    with comment_graph(strict=True) as g:
        comment_variable("v1", id_strategy=lambda _: "counter")
        with pytest.raises(TraceConsistencyError) as info:
            comment_variable("v2", id_strategy=lambda _: "counter")
    err = info.value
    assert err.identity_name == "counter" and err.user_value == "v2"
    assert "comment_mutation" in str(err) and "new_value" not in str(err)
    assert g.node_count == 1


def test_identity_only_reuses_node_despite_new_value() -> None:
    with comment_graph(strict=True):
        first = comment_variable({"id": "m1", "text": "a"}, to_runtime=True, id_strategy=lambda v: v["id"])
        again = comment_variable({"id": "m1"}, to_runtime=True, id_strategy=lambda v: v["id"], identity_only=True)
    assert again.full_node_id == first.full_node_id == "m1@1"
    assert again.raw_value == first.raw_value


def test_reserved_identity_is_rejected() -> None:
    with comment_graph(), pytest.raises(ValueError, match="reserved"):
        comment_variable("x", id_strategy=lambda _: "COMMENT:NONE")


def test_class_name_and_auto_class_name_prefix_the_full_name() -> None:
    class Box:
        def __repr__(self) -> str:
            return "Box()"

    with comment_graph():
        named = comment_variable("q", to_runtime=True, class_name="query", id_strategy=lambda _: "qa-1")
        auto = comment_variable(Box(), to_runtime=True, auto_class_name=True, id_strategy=lambda _: "b")
    assert named.full_node_id == "query:qa-1@1"
    assert auto.full_node_id.startswith("test_class_name_and_auto_class_name_prefix_the_full_name.<locals>.Box:b@")


def test_registered_identity_strategies() -> None:
    IdentityRegistry.register("unit-test-dict", lambda v: f"unit-{v['id']}", exist_ok=True)
    with pytest.raises(ValueError, match="already registered"):
        IdentityRegistry.register("unit-test-dict", lambda v: "x")
    with pytest.raises(TypeError):
        IdentityRegistry.register(3, lambda v: "x")  # type: ignore[arg-type]
    with pytest.raises(OSError):
        IdentityRegistry()
    assert IdentityRegistry.resolve({"id": 1}, "unit-test-dict")({"id": 1}) == "unit-1"
    assert IdentityRegistry.resolve(5, "hash")(5) == "int:5"
    with pytest.raises(KeyError):
        IdentityRegistry.resolve(5, "nope")
    assert {"content", "hash", "object_id"} <= set(IdentityRegistry.keys())


def test_encoding_decoding_and_schema_handles() -> None:
    from pydantic import BaseModel

    class Fact(BaseModel):
        text: str

    with comment_graph():
        rv = comment_variable({"b": 1, "a": 2}, to_runtime=True, encoding_fn=lambda v: json.dumps(v, sort_keys=True),
                              decoding_fn=json.loads)
        fact = comment_variable(Fact(text="hi"), to_runtime=True, schema=Fact)
    assert rv.raw_value == '{"a": 2, "b": 1}' and rv.value == {"a": 2, "b": 1}
    assert fact.raw_value == '{"text":"hi"}' and fact.value == Fact(text="hi")


# ---------------------------------------------------------------- context, sessions and ops
def test_session_scopes_names_and_records_location() -> None:
    with comment_graph(user_id="u", project_id="p") as g:
        with comment_session(session_id="s1", comment="first", category="memory_construction",
                             metadata={"k": 1}) as s:
            assert current_session().session_id == "s1"
            comment_variable("hello", variable_name="greeting")
            assert current_context().get_variable("greeting").raw_value == "'hello'"
        assert current_session() is None
        with pytest.raises(NameError):
            current_context().get_variable("greeting")
        with pytest.raises(ValueError, match="already exists"), comment_session(session_id="s1"):
            pass
        with pytest.raises(ValueError, match="reserved"), comment_session(session_id="__none__"):
            pass
    assert s.session_id == "s1" and s.metadata == {"k": 1} and s.user_id == "u"
    session = g.get_session("s1")
    assert session.trigger_point.endswith(f"test_api.py:{session.session.lineno}")
    assert session.category == "memory_construction"


def test_op_scope_without_session_opens_anonymous_session() -> None:
    with comment_graph() as g:
        with comment_op_scope(op_name="anon", category="misc") as op:
            assert current_op().op_id == op.op_id
            comment_link(source="p", target="r")
        assert current_op() is None and current_session() is None
    sessions = g.get_all_sessions()
    assert len(sessions) == 1 and sessions[0].category == "session"
    (edge,) = g.get_all_edges()
    assert edge.op_id == op.op_id and edge.category == "misc" and edge.session_id == sessions[0].session_id


def test_comment_op_edges_are_the_cartesian_product_with_call_category() -> None:
    with comment_graph() as g, comment_session():
        op = comment_op(inputs=["a", "b"], outputs=["c", "d"], op_name="combine", category="extraction",
                        comment="why", metadata={"k": "v"})
    edges = g.filter_by_operation(op.op_id).edges
    assert len(edges) == 4
    assert {(e.category, e.comment) for e in edges} == {("extraction", "why")}
    assert all(e.metadata == {"k": "v"} for e in edges)
    # nodes created by the call inherit its metadata, not its comment
    assert {n.metadata["k"] for n in g.get_all_nodes()} == {"v"}
    assert {n.comment for n in g.get_all_nodes()} == {None}


def test_reused_op_edges_take_this_calls_category() -> None:
    with comment_graph() as g, comment_session():
        with comment_op_scope(op_name="qa", category="evaluation") as scope:
            op = comment_op(inputs=["q"], outputs=["a"], reuse_op=True)
            named = comment_op(inputs=["q"], outputs=["b"], op_name="ignored", reuse_op=True)
    assert op.op_id == named.op_id == scope.op_id
    assert g.get_operation(scope.op_id).category == "evaluation"
    assert {e.category for e in g.get_all_edges()} == {"operation"}


def test_explicit_op_name_inside_scope_creates_new_op() -> None:
    with comment_graph() as g, comment_session(), comment_op_scope(op_name="outer") as outer:
        inner = comment_op(inputs=["x"], outputs=["y"], op_name="inner")
    assert inner.op_id != outer.op_id and g.op_count == 2


def test_comment_op_without_name_or_scope_is_an_error() -> None:
    with comment_graph(), pytest.raises(RuntimeError, match="op_name"):
        comment_op(inputs=["x"], outputs=["y"])


def test_output_equal_to_input_gets_new_version() -> None:
    with comment_graph() as g, comment_session():
        comment_op(inputs=["same"], outputs=["same"], op_name="identity")
    (edge,) = g.get_all_edges()
    assert edge.source_full_node_id.endswith("@1") and edge.target_full_node_id.endswith("@2")


def test_empty_side_uses_none_sentinel() -> None:
    with comment_graph() as g:
        comment_op(inputs=[], outputs=["produced"], op_name="produce")
        comment_link(source="a", target="b")
    assert g.get_variable("COMMENT:NONE@1").category == "sentinel"
    assert g.get_operation("__none_op__").op_name == "NONE sentinel"
    link = [e for e in g.get_all_edges() if e.op_id == "__none_op__"][0]
    assert link.category == "link" and link.comment is None


def test_value_option_items_override_shared_defaults() -> None:
    with comment_graph() as g, comment_session():
        comment_op(
            inputs=[("q", {"class_name": "query", "id_strategy": lambda _: "qa-1", "category": "message & query"})],
            outputs=[("answer", {"class_name": "prediction", "comment": "model output", "variable_name": "pred"})],
            op_name="qa",
        )
        assert current_context().get_variable("pred").class_name == "prediction"
        with pytest.raises(TypeError, match="unknown option"):
            comment_op(inputs=[("q", {"colour": "red"})], outputs=["x"], op_name="bad")
    query = g.get_variable("query:qa-1@1")
    assert query.category == "message & query"


def test_propagated_attributes_win_and_skip_sentinels() -> None:
    with propagate_attributes(run_id="exp-1"):
        with comment_graph(metadata={"purpose": "t", "run_id": "mine"}) as g:
            comment_op(inputs=[], outputs=[("x", {"metadata": {"run_id": "local"}})], op_name="p")
    assert g.metadata == {"purpose": "t", "run_id": "exp-1"}
    assert g.get_variable(g.search_variables(name_pattern="^str:")[0].full_node_id).metadata == {"run_id": "exp-1"}
    assert g.get_variable("COMMENT:NONE@1").metadata == {}
    assert g.get_session("__none__").metadata == {}


def test_query_variables_filters_registered_names() -> None:
    with comment_graph(), comment_session():
        comment_variable("m", variable_name="raw_input_1", category="message")
        comment_variable("p", variable_name="prompt", category="prompt", class_name="tpl")
        ctx = current_context()
        assert [v.raw_value for v in ctx.query_variables(category="message")] == ["'m'"]
        assert [v.raw_value for v in ctx.query_variables(name_pattern="^pro")] == ["'p'"]
        assert [v.raw_value for v in ctx.query_variables(class_name="tpl")] == ["'p'"]
        removed = ctx.remove_variable("prompt")
        assert ctx.get_names_by_full_node_id(removed.full_node_id) == set()
        with pytest.raises(NameError):
            ctx.remove_variable("prompt")


# ---------------------------------------------------------------- mutation
def test_mutation_versions_target_and_links_inputs() -> None:
    store = {"id": "m1", "memory": "Alice lives in Lyon"}
    with comment_graph(strict=True) as g, comment_session():
        decision = comment_variable("UPDATE", to_runtime=True, class_name="update_action")
        with comment_mutation(target=store, inputs=[decision], id_strategy=lambda v: f"memory-unit-{v['id']}",
                              encoding_fn=json.dumps, category="memory_entry") as m:
            store["memory"] = "Alice lives in Paris"
    new = m.result
    assert new.full_node_id == "memory-unit-m1@2" and json.loads(new.raw_value)["memory"] == "Alice lives in Paris"
    assert new.category == "memory_entry"
    op = g.get_operation(g.get_all_edges()[0].op_id)
    assert op.op_name == "mutation:memory-unit-m1" and op.category == "mutation"
    comments = sorted(e.comment or "" for e in g.get_all_edges())
    assert comments == ["", "Version lineage."]


def test_mutation_always_adds_a_version_and_reuses_active_op() -> None:
    box: list[str] = []
    with comment_graph() as g, comment_session(), comment_op_scope(op_name="update", category="update") as scope:
        with comment_mutation(target=box, id_strategy=lambda _: "box", mutation_category="llm_response",
                              reuse_op=True) as m:
            pass
    assert m.result.version == 2 and m.result.raw_value == "[]"
    assert {e.op_id for e in g.get_all_edges()} == {scope.op_id}
    assert {e.category for e in g.get_all_edges()} == {"llm_response"}


def test_mutation_with_exception_records_no_new_version() -> None:
    box: list[int] = []
    with comment_graph() as g, comment_session():
        with pytest.raises(KeyError), comment_mutation(target=box, id_strategy=lambda _: "box") as m:
            raise KeyError("boom")
    assert m.result is None and g.node_count == 1


def test_mutation_rejects_handles_and_self_inputs() -> None:
    with comment_graph(), comment_session():
        rv = comment_variable([1], to_runtime=True, id_strategy=lambda _: "t")
        with pytest.raises(ValueError, match="not a RuntimeVariable"):
            comment_mutation(target=rv)
        with pytest.raises(ValueError, match="target itself"), comment_mutation(
            target=[1], inputs=[rv], id_strategy=lambda _: "t"
        ):
            pass


def test_mutation_numbers_after_versions_recorded_inside_block() -> None:
    box = ["a"]
    with comment_graph() as g, comment_session():
        with comment_mutation(target=box, id_strategy=lambda _: "box") as m:
            comment_variable(["other"], id_strategy=lambda _: "box")  # creates box@2 inside the block
            box.append("b")
    assert m.result.version == 3
    assert [v.version for v in g.get_versions("box")] == [1, 2, 3]


# ---------------------------------------------------------------- comment_fn
def test_comment_fn_records_arguments_after_defaults_and_return_value() -> None:
    @comment_fn(op_name="toy.summarize", category="extraction",
                param_options={"text": {"class_name": "raw_text"}, "-o": {"class_name": "summary"}})
    def summarize(text: str, limit: int = 5) -> str:
        """Truncate a text."""
        return text[:limit]

    with comment_graph() as g, comment_session():
        assert summarize("abcdefgh") == "abcde"
    (op,) = g.get_all_operations()
    assert op.op_name == "toy.summarize" and op.comment == f"[{summarize.__qualname__}] Truncate a text."
    edges = g.get_all_edges()
    assert len(edges) == 2
    assert {e.target_full_node_id.split(":")[0] for e in edges} == {"summary"}
    assert sorted(g.get_variable(e.source_full_node_id).raw_value for e in edges) == ["'abcdefgh'", "5"]


def test_comment_fn_async_spans_awaited_body() -> None:
    @comment_fn(op_name="async.step")
    async def step(x: str) -> str:
        await asyncio.sleep(0)
        comment_link(source=("inner-a", {"class_name": "n"}), target=("inner-b", {"class_name": "n"}))
        return x.upper()

    with comment_graph() as g, comment_session():
        assert asyncio.run(step("hi")) == "HI"
    (op,) = g.get_all_operations()
    assert {e.op_id for e in g.get_all_edges()} == {op.op_id}
    assert g.edge_count == 2


def test_comment_fn_raising_body_leaves_edgeless_op() -> None:
    @comment_fn(op_name="broken")
    def broken(x: int) -> int:
        raise ValueError("bad")

    with comment_graph() as g, comment_session():
        with pytest.raises(ValueError):
            broken(1)
    assert g.op_count == 1 and g.edge_count == 0


def test_comment_fn_recording_failure_never_breaks_the_host() -> None:
    @comment_fn(op_name="strict", id_strategy=lambda _: "fixed")
    def f(x: int) -> int:
        return x + 1

    with comment_graph(strict=True), comment_session():
        assert f(1) == 2
        assert f(5) == 6  # second call collides on the identity in a strict graph: logged only


def test_comment_fn_none_return_and_include_source() -> None:
    @comment_fn(op_name="sink", include_source=True, op_metadata={"k": 1})
    def sink(x: int) -> None:
        return None

    with comment_graph() as g, comment_session():
        sink(3)
    (edge,) = g.get_all_edges()
    assert edge.target_full_node_id == "COMMENT:NONE@1"
    assert "def sink" in edge.metadata["source_code"] and edge.metadata["k"] == 1


# ---------------------------------------------------------------- concurrency
def test_threads_record_into_separate_graphs() -> None:
    results: dict[int, object] = {}
    barrier = threading.Barrier(4)

    def worker(i: int) -> None:
        assert current_graph() is None  # a new thread starts with an empty context
        with comment_graph(user_id=f"user-{i}") as g, comment_session(session_id=f"s-{i}"):
            barrier.wait()
            for j in range(50):
                comment_op(inputs=[f"in-{i}-{j}"], outputs=[f"out-{i}-{j}"], op_name=f"op-{i}")
        results[i] = g

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, g in results.items():
        assert g.user_id == f"user-{i}" and g.edge_count == 50
        assert {o.op_name for o in g.get_all_operations()} == {f"op-{i}"}
        assert {n.session_id for n in g.get_all_nodes()} == {f"s-{i}"}


def test_asyncio_gather_records_into_separate_graphs() -> None:
    async def one(i: int):
        with comment_graph(user_id=f"task-{i}") as g, comment_session(session_id=f"s-{i}"):
            for j in range(20):
                with comment_op_scope(op_name=f"step-{i}"):
                    await asyncio.sleep(0)
                    comment_op(inputs=[f"a-{i}-{j}"], outputs=[f"b-{i}-{j}"], reuse_op=True)
        return g

    async def main():
        return await asyncio.gather(*(one(i) for i in range(5)))

    graphs = asyncio.run(main())
    for i, g in enumerate(graphs):
        assert g.edge_count == 20 and g.op_count == 20
        assert {o.op_name for o in g.get_all_operations()} == {f"step-{i}"}
        values = {g.get_variable(e.source_full_node_id).raw_value for e in g.get_all_edges()}
        assert values == {repr(f"a-{i}-{j}") for j in range(20)}


def test_threads_share_one_graph_safely() -> None:
    with comment_graph() as g, comment_session(session_id="shared"):
        def worker(i: int) -> None:
            for j in range(100):
                comment_op(inputs=[f"{i}-{j}"], outputs=[f"{i}-{j}-out"], op_name="w")

        import contextvars

        threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker, i)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert g.edge_count == 400 and g.op_count == 400 and g.node_count == 800
    assert RuntimeVariable  # handles are importable from smartcomment.runtime
