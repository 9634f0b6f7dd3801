"""A measure on a team's own listener scale: the line fitted by a listening test (`listen results` writes
calibration.json) from a measure's values to its listeners' mean votes, and the range of the measure it holds for.
The assess stage reads it (`assess.calibration`) and adds a `calibrated_<measure>` column beside each measure it
fits, empty outside that range: a line fitted on clips between 2.1 and 3.4 says nothing of a 4.2. The range is kept
exactly as the fit saw it, so the clips at its ends are inside it; a value is kept on the test's scale (a line
can run past 5 within the range: it is clipped there, and the column's meaning says so)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from pipeline.errors import InputError

PREFIX = "calibrated_"
NAME = "calibrated"  # as measures.json names the columns


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """listeners ≈ intercept + slope × measure, fitted on the test's clips' mean votes."""
    measure: str  # the column it maps (dnsmos_ovrl, speaker_sim, …)
    test: str  # the listening test it came from
    kind: str  # mos or smos: the scale it maps onto
    intercept: float
    slope: float
    intercept_ci95_low: float | None
    intercept_ci95_high: float | None
    slope_ci95_low: float | None
    slope_ci95_high: float | None
    residual_sd: float  # of a clip's mean vote about the line
    low: float  # the measure's range in the fit
    high: float
    clips: int
    floor: float = 1.0  # the test's scale, which a calibrated value never leaves
    ceiling: float = 5.0

    def __post_init__(self):
        if not self.low <= self.high or self.clips < 3:
            raise ValueError(f"calibration of {self.measure}: range [{self.low}, {self.high}] over {self.clips} "
                             "clips is not a fit")

    @property
    def column(self) -> str:
        return PREFIX + self.measure

    def apply(self, value: float | None) -> float | None:
        if value is None or not self.low <= value <= self.high:
            return None
        return round(min(self.ceiling, max(self.floor, self.intercept + self.slope * value)), 4)

    def meaning(self) -> str:
        return (f"{self.measure} on the {self.kind.upper()} scale of listening test {self.test!r} "
                f"({self.intercept:+.3g} + {self.slope:.3g} × {self.measure}, residual SD {self.residual_sd:.3g}, "
                f"{self.clips} clips); empty outside [{self.low:.6g}, {self.high:.6g}], the range it was fitted on; "
                f"clipped to [{self.floor:g}, {self.ceiling:g}], the test's scale")

    def as_json(self) -> dict:
        return asdict(self)


def write(path: str | Path, fits: list[Calibration]) -> None:
    from pipeline.core import store

    store.write_json(path, {"calibrations": [f.as_json() for f in fits]})


def read(path: str | Path) -> list[Calibration]:
    """The fits of a calibration.json; InputError naming the file and the fix when it is not one."""
    fix = "give the calibration.json that `listen results --out DIR` wrote"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return [Calibration(**f) for f in data["calibrations"]]
    except OSError as e:
        raise InputError(f"assess.calibration {path}: cannot be read ({e.strerror}); {fix}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"assess.calibration {path}: not a calibration ({e}); {fix}") from None
