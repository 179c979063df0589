"""Scenarios: load, edit with the same paths and checks as ``dcsim run --set``, run."""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dcsim import _dcsim
from dcsim._dcsim import ScenarioError
from dcsim.result import Result


class Scenario:
    """A validated scenario: its TOML text, the file it came from, and overrides.

    A Scenario is the file's text plus the overrides given with :meth:`set`, applied in
    order exactly as ``dcsim run FILE --set PATH=VALUE`` applies them, so the same scenario
    has the same digest here and on the command line. Every change is validated at once:
    a bad key or value raises :class:`ScenarioError` with the command line's message.
    Scenarios are small plain values; they pickle, so they can be sent to Dask workers.
    """

    __slots__ = ("_name", "_path", "_resolved", "_sets", "_text")

    def __init__(self, text: str, path: str | None = None, sets: Sequence[str] = ()) -> None:
        """Prefer :meth:`from_file`, :meth:`from_toml` or :meth:`from_dict`.

        ``path`` is where ``text`` was read from: relative file names in the scenario (CDF
        and trace files) are taken from its folder, and the name defaults to its stem.
        """
        self._text = text
        self._path = path
        self._sets = list(sets)
        self._name, self._resolved = _dcsim.check(text, path, self._sets)

    # -- construction ----------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Scenario:
        """Reads a scenario file (TOML), as ``dcsim run FILE`` does."""
        p = os.fspath(path)
        try:
            text = Path(p).read_text(encoding="utf-8")
        except OSError as e:
            raise ScenarioError(f"{p}: cannot read the file: {e.strerror or e}") from None
        except UnicodeDecodeError as e:
            raise ScenarioError(f"{p}: cannot read the file: {e}") from None
        return cls(text, p)

    @classmethod
    def from_toml(cls, text: str) -> Scenario:
        """A scenario from TOML text (named by its ``name`` key, else ``scenario``)."""
        return cls(text)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Scenario:
        """A scenario from a dict shaped like the TOML file (``{"sim": {"duration":
        "5ms"}, "topology": {...}, "flows": [{...}]}``), such as :meth:`resolved` returns.
        A key whose value is None is left out (its default applies)."""
        try:
            text = json.dumps(d, default=_plain)
        except (TypeError, ValueError) as e:
            raise ScenarioError(f"<dict>: {e}") from None
        return cls(_dcsim.json_to_toml(text))

    # -- editing ---------------------------------------------------------------------

    def set(self, path: str, value: Any) -> Scenario:
        """Sets one value, like ``--set PATH=VALUE``, and returns the scenario.

        ``path`` is a dotted key path with list indices (``"generators[0].pattern.load"``,
        ``"topology.host_link.rate"``); ``value`` a Python value (int, float, bool, str,
        list, dict). Quantities with units are strings: ``set("sim.duration", "5ms")``.
        Raises :class:`ScenarioError` (and leaves the scenario unchanged) if the result
        does not validate.
        """
        text = f"{path}={toml_literal(value)}"
        try:
            return self.override(text)
        except ScenarioError as e:
            # Named as the caller wrote it, not as the command line's --set.
            raise ScenarioError(str(e).replace(f"--set {text}:", f"set({path!r}, {value!r}):", 1)) from None

    def override(self, text: str) -> Scenario:
        """Applies one override written as on the command line, ``"PATH=VALUE"`` with the
        value in TOML (a bare word is taken as a string, as ``--set`` takes it)."""
        sets = [*self._sets, text]
        self._name, self._resolved = _dcsim.check(self._text, self._path, sets)
        self._sets = sets
        return self

    def with_seed(self, seed: int) -> Scenario:
        """A copy with ``sim.seed`` set."""
        return self.copy().set("sim.seed", int(seed))

    def copy(self) -> Scenario:
        """An independent copy."""
        return Scenario(self._text, self._path, self._sets)

    # -- reading ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The scenario's name (its ``name`` key, else the file's stem)."""
        return self._name

    @property
    def path(self) -> str | None:
        """The file it was read from, if any."""
        return self._path

    @property
    def overrides(self) -> list[str]:
        """The overrides applied, as ``PATH=VALUE`` strings in ``--set`` form."""
        return list(self._sets)

    @property
    def text(self) -> str:
        """The scenario's own TOML text, before overrides."""
        return self._text

    def resolved(self) -> dict[str, Any]:
        """The fully resolved scenario (every default and preset filled in) as a dict: what
        ``dcsim show`` prints."""
        return json.loads(self._resolved)

    def to_toml(self) -> str:
        """The fully resolved scenario as TOML; ``Scenario.from_toml`` of it is the same
        scenario."""
        return _dcsim.json_to_toml(self._resolved)

    # -- running ---------------------------------------------------------------------

    def run(self, seed: int | None = None, progress: bool = False) -> Result:
        """Runs the scenario and returns its results.

        The simulation runs in Rust with the GIL released, so several scenarios can run at
        once on threads. ``seed`` overrides ``sim.seed`` (as ``dcsim run --seed``).
        ``progress`` prints a line to stderr about once a second. Ctrl-C stops the run
        within milliseconds with KeyboardInterrupt.
        """
        sets = list(self._sets)
        if seed is not None:
            sets.append(f"sim.seed={int(seed)}")
        return Result(_dcsim.run(self._text, self._path, sets, progress))

    def estimate(self, seconds: float = 4.0) -> dict[str, Any]:
        """How long :meth:`run` will take on this machine, as ``dcsim check --estimate``
        says: the scenario runs for ``seconds`` of wall time and the rate of the second
        half is extrapolated over what remains (simulated time, or bytes still to come).

        Returns ``seconds`` (the whole run), ``build_seconds``, ``probe_seconds``,
        ``covered`` (the share of the run the probe saw; 1 if it finished it), ``basis``
        (``"simulated time"``, ``"bytes"`` or ``"flows"``; None if finished),
        ``events_per_second``, ``flows`` (expected) and ``text`` (the sentence the command
        line prints). A run that grows costlier after the probe makes the figure low.
        """
        return json.loads(_dcsim.estimate(self._text, self._path, list(self._sets), float(seconds)))

    def __repr__(self) -> str:
        where = f" from {self._path!r}" if self._path else ""
        extra = f", overrides {self._sets!r}" if self._sets else ""
        return f"<dcsim.Scenario {self._name!r}{where}{extra}>"

    def __eq__(self, other: object) -> bool:
        """Equal if they resolve to the same scenario."""
        return isinstance(other, Scenario) and self._resolved == other._resolved

    def __hash__(self) -> int:
        return hash(self._resolved)

    def __getstate__(self) -> tuple[str, str | None, list[str]]:
        return (self._text, self._path, self._sets)

    def __setstate__(self, state: tuple[str, str | None, list[str]]) -> None:
        text, path, sets = state
        self._text, self._path, self._sets = text, path, list(sets)
        self._name, self._resolved = _dcsim.check(text, path, self._sets)


def toml_literal(value: Any) -> str:
    """A Python value as a TOML value, for an override (``"5ms"`` -> ``"\\"5ms\\""``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    if isinstance(value, (str, os.PathLike)):
        return json.dumps(os.fspath(value), ensure_ascii=False)
    if isinstance(value, Mapping):
        items = ", ".join(f"{json.dumps(str(k), ensure_ascii=False)} = {toml_literal(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if value is None:
        raise ScenarioError("None has no TOML form; to use a default, leave the key out of the scenario")
    raise ScenarioError(f"cannot write a {type(value).__name__} as a TOML value")


def _plain(v: Any) -> Any:
    """json.dumps fallback: numpy scalars and paths as plain values."""
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    raise TypeError(f"cannot write a {type(v).__name__} in a scenario")
