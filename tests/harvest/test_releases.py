"""Which release ``--package`` takes and which it compares it with: by upload time, final
releases only unless one is named."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from execbench.harvest.index import Release
from execbench.harvest.options import HarvestError
from execbench.harvest.releases import Wanted, pick, wanted, wanted_from


def _release(version: str, day: str, suffix: str = ".tar.gz") -> Release:
    return Release("tiny", version, f"tiny-{version}{suffix}", f"https://x/tiny-{version}",
                   "a" * 64, datetime.fromisoformat(day).replace(tzinfo=UTC))


# uploaded in this order; 1.9.1 fixes an old branch after 2.0
FOUND = [_release("1.0", "2023-01-05"), _release("2.0", "2023-06-01"),
         _release("2.0", "2023-06-01T00:00:01", ".zip"), _release("3.0rc1", "2023-08-01"),
         _release("1.9.1", "2023-09-10"), _release("3.0", "2023-11-20")]


def test_the_first_final_release_after_the_day_against_the_last_on_or_before_it() -> None:
    chosen = pick(Wanted("tiny"), FOUND, date(2023, 6, 1))
    assert (chosen.release.version, chosen.earlier.version) == ("1.9.1", "2.0")
    assert chosen.release.filename == "tiny-1.9.1.tar.gz"
    chosen = pick(Wanted("tiny"), FOUND, date(2023, 5, 31))
    assert (chosen.release.version, chosen.earlier.version) == ("2.0", "1.0")
    assert chosen.release.filename == "tiny-2.0.tar.gz"  # the .tar.gz, uploaded first
    chosen = pick(Wanted("tiny"), FOUND, date(2022, 12, 31))
    assert (chosen.release.version, chosen.earlier) == ("1.0", None)
    with pytest.raises(HarvestError, match="tiny: no release uploaded after 2023-11-20"):
        pick(Wanted("tiny"), FOUND, date(2023, 11, 20))


def test_without_a_day_the_latest_and_a_named_version_as_named() -> None:
    assert pick(Wanted("tiny"), FOUND, None).release.version == "3.0"
    assert pick(Wanted("tiny", "3.0rc1"), FOUND, None).release.version == "3.0rc1"
    chosen = pick(Wanted("tiny", "3.0"), FOUND, date(2023, 7, 1))
    assert (chosen.release.version, chosen.earlier.version) == ("3.0", "2.0")
    with pytest.raises(HarvestError, match="tiny 2.0 was uploaded on 2023-06-01, not after"):
        pick(Wanted("tiny", "2.0"), FOUND, date(2023, 6, 1))
    with pytest.raises(HarvestError, match="no source distribution of version 4.0"):
        pick(Wanted("tiny", "4.0"), FOUND, None)
    with pytest.raises(HarvestError, match="lists no source distribution"):
        pick(Wanted("tiny"), [], None)


def test_names_are_read_as_pip_names_them(tmp_path: Path) -> None:
    assert wanted("Tiny_Thing==1.0") == Wanted("tiny-thing", "1.0")
    for text in ("tiny>=1.0", "../tiny", "tiny==one", "-r file"):
        with pytest.raises(HarvestError):
            wanted(text)
    listing = tmp_path / "packages.txt"
    listing.write_text("# fresh ones\nalpha\n\nbeta==2.0\n")
    assert wanted_from(["gamma"], listing) == [Wanted("gamma"), Wanted("alpha"),
                                               Wanted("beta", "2.0")]


def test_a_hostile_package_list_is_refused_by_line_or_read_in_one_pass(tmp_path: Path) -> None:
    for text in ("tiny==" + "9" * 5_000, "%2e%2e/x", "tiny thing", "tiny\x00", "tiny[x]",
                 "tiny===1.0", "tiny==1.0==2.0", "-e .", "tiny @ https://x/t.tar.gz"):
        with pytest.raises(HarvestError) as raised:
            wanted(text)
        assert len(str(raised.value)) < 300, text
    listing = tmp_path / "packages.txt"
    listing.write_text("\ufeffalpha\r\n# a comment\r\n  beta == 2.0  \r\n../gamma\n")
    with pytest.raises(HarvestError, match=r"packages.txt, line 4: '../gamma' is not a"):
        wanted_from([], listing)
    # 50,000 names, each checked once against those before (not against every other
    # name: 2.5 billion comparisons)
    listing.write_text("".join(f"p{number}\n" for number in range(50_000)))
    found = wanted_from([], listing)
    assert (len(found), found[-1]) == (50_000, Wanted("p49999"))
    with pytest.raises(HarvestError, match="the package 'p7' is named twice"):
        wanted_from(["P7"], listing)
    listing.write_text("\ufeffalpha\r\n# a comment\r\n  beta == 2.0  \r\n")
    assert wanted_from([], listing) == [Wanted("alpha"), Wanted("beta", "2.0")]
