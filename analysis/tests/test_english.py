import pytest

from svclab_analysis.english import count, noun


@pytest.mark.parametrize(("n", "want"),
                         [(0, "0 runs"), (1, "1 run"), (2, "2 runs"), (11, "11 runs")])
def test_count(n: int, want: str) -> None:
    assert count(n, "run") == want


def test_noun_for_a_list() -> None:
    assert noun(1, "block") == "block"
    assert noun(3, "block") == "blocks"
    assert noun(3, "process") == "processes"
