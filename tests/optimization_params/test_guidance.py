"""Guidance orders the search: the attributed operation's own parameters before the upstream ones,
upstream only once the own ones are flat, each stage warm-started from the best point so far."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from toolkits.optimization.guidance import is_flat, plan_stages, rank_parameters, space_size

RAG_FIELDS = ["max_tokens", "num_overlap_msgs", "deferred", "top_k"]


def _group(*assignments):
    return SimpleNamespace(assignments=[SimpleNamespace(candidates=c, upstream=u) for c, u in assignments])


def test_the_attributed_operations_own_parameters_rank_before_those_found_upstream():
    # A retrieval miss holds top_k and reaches the chunking settings upstream; the walk finds
    # max_tokens nearest. Upstream ones are more numerous here and still come after.
    groups = [_group((("top_k",), ("max_tokens", "num_overlap_msgs", "deferred")),
                     ((), ("num_overlap_msgs", "deferred")), ((), ("num_overlap_msgs",)))]
    ranked = rank_parameters(groups, RAG_FIELDS)
    assert [p.name for p in ranked] == ["top_k", "num_overlap_msgs", "max_tokens", "deferred"]
    assert [p.stage for p in ranked] == ["own", "upstream", "upstream", "upstream"]
    assert ranked[1].distance == 1 and ranked[1].upstream == 3 and ranked[0].own == 1
    stages = plan_stages(ranked)
    assert [(s.name, s.parameters, s.stop_when_flat) for s in stages] == [
        ("own", ("top_k",), True), ("upstream", ("num_overlap_msgs", "max_tokens", "deferred"), False)]


def test_a_parameter_outside_the_layer_is_ignored_and_no_upstream_means_no_early_stop():
    ranked = rank_parameters([_group((("top_k", "question_answering_prompt"), ()))], RAG_FIELDS)
    assert [p.name for p in ranked] == ["top_k"]
    # nothing upstream to spend the trials on: the own stage keeps every trial
    assert [(s.name, s.stop_when_flat) for s in plan_stages(ranked)] == [("own", False)]


def test_own_parameters_found_flat_before_are_skipped_so_their_trials_go_upstream():
    ranked = rank_parameters([_group((("top_k",), ("max_tokens",)))], RAG_FIELDS)
    assert [s.name for s in plan_stages(ranked, skip={"top_k"})] == ["upstream"]


@pytest.mark.parametrize("values, start, flat", [
    ([0.5, 0.5], 0.5, True),  # ties never count as a gain
    ([0.6, 0.55, 0.6], 0.5, True),  # the gain of 0.6 was followed by two trials without one
    ([0.6, 0.55, 0.7], 0.5, False),
    ([None, None], 0.5, True),  # failed trials gain nothing
    ([0.4], 0.5, False),  # fewer trials than the patience
])
def test_a_stage_is_flat_after_patience_trials_without_a_gain(values, start, flat):
    assert is_flat(values, start, patience=2) is flat


def test_space_size_counts_discrete_points_only():
    spec = SimpleNamespace
    assert space_size({"deferred": spec(kind="categorical", choices=(False, True)),
                       "overlap": spec(kind="int", low=0, high=2)}) == 6
    assert space_size({"x": spec(kind="float", low=0.0, high=1.0)}) is None


def test_neighbours_move_one_step_and_start_a_null_number_in_the_middle_then_at_its_ends():
    from membase.layers.parameters import tunable_parameters

    rag = {p.name: p for p in tunable_parameters("NaiveRAG")}
    from toolkits.optimization.guidance import neighbours

    assert neighbours(rag["num_overlap_msgs"], 0) == [2]  # a quarter of 0..8 up; below 0 is clipped away
    assert neighbours(rag["num_overlap_msgs"], 4, level=1) == [5, 3]
    # the geometric middle of 64..2048, then the nearest finite values (the bounds)
    assert neighbours(rag["max_tokens"], None) == [362, 2048, 64]
    assert neighbours(rag["max_tokens"], None, level=1) == neighbours(rag["max_tokens"], 362)
    assert neighbours(rag["max_tokens"], 362) == [1448, 90]
    assert neighbours(rag["deferred"], False) == [True]


class _Landscape:
    """A stand-in objective: recall rises with overlap up to 2 and with small documents."""

    def __init__(self):
        self.calls = []

    def evaluate(self, fields, top_k):
        self.calls.append(dict(fields))
        overlap, size = fields.get("num_overlap_msgs", 0), fields.get("max_tokens") or 2048
        value = 0.5 + 0.1 * min(overlap, 2) - 0.02 * max(overlap - 2, 0) + (0.1 if size <= 200 else 0.0)
        return SimpleNamespace(micro=value, macro=value, n=10)


def test_the_upstream_pattern_search_moves_from_the_best_point_and_replays_its_scores(tmp_path):
    from toolkits.optimization.bundle import MemoryConfigBundle
    from toolkits.optimization.guidance import SearchStage
    from toolkits.optimization.loop import RoundContext
    from toolkits.optimization.param_loop import ParameterRoundStep, ParameterSearchSettings
    from toolkits.optimization.parameters import parameter_registry

    base = MemoryConfigBundle.from_layer_config({"layer_type": "NaiveRAG"}).with_updates({"top_k": 20})
    stage = SearchStage(name="upstream", parameters=("max_tokens", "num_overlap_msgs", "deferred"),
                        stop_when_flat=False, method="pattern")
    objective = _Landscape()

    def step():
        return ParameterRoundStep(objective=objective, registry=parameter_registry(), search_root=tmp_path / "search",
                                  settings=ParameterSearchSettings(show_progress=False))

    ctx = RoundContext(k=1, folder=tmp_path / "iteration_1", bundle=base, dataset=None, trajectory_indexes=[0])
    outcome, record = step()._pattern_stage(ctx, stage, base, 0.5, 7)
    points = [(t["params"]["max_tokens"], t["params"]["num_overlap_msgs"], t["params"]["deferred"])
              for t in outcome.trials]
    # one parameter at a time from the best point, in rank order: max_tokens' middle (a tie, not
    # kept), overlap 2 (kept), then from there the middle again (a tie), overlap 4 (loses) and
    # deferred (a tie) before the null's bounds (2048 ties, 64 is small documents: kept)
    assert points == [(362, 0, False), (None, 2, False), (362, 2, False), (None, 4, False), (None, 2, True),
                      (2048, 2, False), (64, 2, False)]
    assert (None, 0, False) not in points  # the start point is scored already
    assert outcome.best["value"] == pytest.approx(0.8) and record["trials"] == 7 and record["method"] == "pattern"
    # a rerun replays the stored scores: same trials, no evaluation
    before = len(objective.calls)
    again, _ = step()._pattern_stage(ctx, stage, base, 0.5, 7)
    assert again.trials == outcome.trials and len(objective.calls) == before


class _Peak:
    """A stand-in objective whose recall peaks at one document size, between the search's first steps."""

    def __init__(self, peak):
        self.peak = peak

    def evaluate(self, fields, top_k):
        size = fields.get("max_tokens")
        value = 0.0 if size is None else 1.0 - abs(size - self.peak) / 4096
        return SimpleNamespace(micro=value, macro=value, n=10)


@pytest.mark.parametrize("peak", [128, 100])
def test_the_pattern_search_from_a_null_setting_reaches_values_between_its_first_steps(tmp_path, peak):
    # max_tokens null used to start only at the middle (362), whose moves (x4, x2, x1.41, x1.19)
    # never land on 128 (the grid's point) and stopped after three halvings: 100 was out of reach
    from toolkits.optimization.bundle import MemoryConfigBundle
    from toolkits.optimization.guidance import SearchStage
    from toolkits.optimization.loop import RoundContext
    from toolkits.optimization.param_loop import ParameterRoundStep, ParameterSearchSettings
    from toolkits.optimization.parameters import parameter_registry

    base = MemoryConfigBundle.from_layer_config({"layer_type": "NaiveRAG"})
    stage = SearchStage(name="upstream", parameters=("max_tokens",), stop_when_flat=False, method="pattern")
    step = ParameterRoundStep(objective=_Peak(peak), registry=parameter_registry(), search_root=tmp_path / "search",
                              settings=ParameterSearchSettings(show_progress=False))
    ctx = RoundContext(k=1, folder=tmp_path / "iteration_1", bundle=base, dataset=None, trajectory_indexes=[0])
    outcome, record = step._pattern_stage(ctx, stage, base, 0.0, 40)
    assert outcome.best["params"]["max_tokens"] == peak
    # it stops only when no finer integer step is left (not after a fixed number of halvings)
    assert record["ended"] == "exhausted" and record["trials"] < 40


def test_a_pass_of_the_pattern_search_tries_a_null_settings_bounds_after_the_other_parameters_moves():
    from membase.layers.parameters import tunable_parameters
    from toolkits.optimization.guidance import pattern_moves

    rag = {p.name: p for p in tunable_parameters("NaiveRAG")}
    specs = {"max_tokens": rag["max_tokens"], "num_overlap_msgs": rag["num_overlap_msgs"], "deferred": rag["deferred"]}
    # max_tokens ranks first and, being null, has three first moves; the middle comes first, its
    # bounds (2048, 64) only after the other parameters moved once
    assert pattern_moves(specs, {"max_tokens": None, "num_overlap_msgs": 0, "deferred": False}) == [
        {"max_tokens": 362, "num_overlap_msgs": 0, "deferred": False},
        {"max_tokens": None, "num_overlap_msgs": 2, "deferred": False},
        {"max_tokens": None, "num_overlap_msgs": 0, "deferred": True},
        {"max_tokens": 2048, "num_overlap_msgs": 0, "deferred": False},
        {"max_tokens": 64, "num_overlap_msgs": 0, "deferred": False}]
    # a set value keeps both of its moves together, in rank order (a higher-ranked parameter's
    # second move still comes before a lower-ranked one's first)
    assert pattern_moves(specs, {"max_tokens": 362, "num_overlap_msgs": 4, "deferred": False}) == [
        {"max_tokens": 1448, "num_overlap_msgs": 4, "deferred": False},
        {"max_tokens": 90, "num_overlap_msgs": 4, "deferred": False},
        {"max_tokens": 362, "num_overlap_msgs": 6, "deferred": False},
        {"max_tokens": 362, "num_overlap_msgs": 2, "deferred": False},
        {"max_tokens": 362, "num_overlap_msgs": 4, "deferred": True}]
    assert pattern_moves({}, {"max_tokens": None}) == []


def test_a_small_upstream_budget_reaches_the_second_ranked_parameter(tmp_path):
    # two trials: the null's middle (a tie) and then overlap 2, the gain; trying the null's
    # bounds first would have spent both trials on max_tokens and found nothing
    from toolkits.optimization.bundle import MemoryConfigBundle
    from toolkits.optimization.guidance import SearchStage
    from toolkits.optimization.loop import RoundContext
    from toolkits.optimization.param_loop import ParameterRoundStep, ParameterSearchSettings
    from toolkits.optimization.parameters import parameter_registry

    base = MemoryConfigBundle.from_layer_config({"layer_type": "NaiveRAG"}).with_updates({"top_k": 20})
    stage = SearchStage(name="upstream", parameters=("max_tokens", "num_overlap_msgs"), stop_when_flat=False,
                        method="pattern")
    step = ParameterRoundStep(objective=_Landscape(), registry=parameter_registry(), search_root=tmp_path / "search",
                              settings=ParameterSearchSettings(show_progress=False))
    ctx = RoundContext(k=1, folder=tmp_path / "iteration_1", bundle=base, dataset=None, trajectory_indexes=[0])
    outcome, _ = step._pattern_stage(ctx, stage, base, 0.5, 2)
    assert [(t["params"]["max_tokens"], t["params"]["num_overlap_msgs"]) for t in outcome.trials] == [(362, 0), (None, 2)]
    assert outcome.best["value"] == pytest.approx(0.7)
