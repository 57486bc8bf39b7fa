from __future__ import annotations

import pydantic

from membase.utils.patching import MonkeyPatcher, PatchSpec, make_attr_patch


class Box:
    def value(self) -> int:
        return 1


class Model(pydantic.BaseModel):
    n: int = 0

    def value(self) -> int:
        return 2


def _doubling(name, obj):
    getter, setter = make_attr_patch(obj, "value")
    return PatchSpec(name=name, getter=getter, setter=setter, wrapper=lambda orig: lambda: orig() * 10)


def test_patcher_installs_and_restores_in_reverse_order():
    box, model = Box(), Model()
    patcher = MonkeyPatcher([_doubling("box", box), _doubling("model", model)])
    with patcher:
        with patcher:  # re-entering while active is a no-op
            assert (box.value(), model.value()) == (10, 20)
        assert patcher.active
    assert not patcher.active
    assert (box.value(), model.value()) == (1, 2)


def test_patcher_restores_when_the_body_raises():
    box = Box()
    try:
        with MonkeyPatcher([_doubling("box", box)]):
            raise KeyError("x")
    except KeyError:
        pass
    assert box.value() == 1
