"""One small validated case on the GPU machine (`pytest -m gpu`): the shipped profile of
this GPU predicts a memory-bound pass that gpuvs then measures."""

from __future__ import annotations

import pytest

from gpuvs.model import Case
from gpuvs.predicting import forecast, profile
from gpuvs.predicting.work import of_case

pytestmark = pytest.mark.gpu


def test_x_times_5_on_1e8_floats_lands_where_the_shipped_profile_predicts() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import gpuvs

    name = torch.cuda.get_device_name(0)
    shipped = [f for f in profile.available()
               if f.where == profile.SHIPPED and f.profile.device == name]
    if not shipped:
        pytest.skip(f"no profile of {name} ships with gpuvs yet")
    t = forecast.target(str(shipped[0].path))
    case = Case("elementwise", "correct", "torch", "cuda:0", "float32", 10**8,
                (("op", "scale"),))
    predicted = t.predict(of_case(case))
    assert predicted.estimate.dominant.term == "memory"
    x = torch.rand(10**8, device="cuda")

    def scale() -> object:
        x.mul_(5)
        return x

    m = gpuvs.measure(scale, device="cuda", budget_s=0.5)
    assert m.summary is not None
    if predicted.interval is not None:
        low, high = predicted.interval
        assert low <= m.summary.median <= high
    assert m.summary.median == pytest.approx(predicted.seconds, rel=0.25)
