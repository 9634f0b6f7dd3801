"""Backends by name, and declarations by name.

`Registry`: backends named `family:name` (`piper:joe`, `faster-whisper:base`). Each family is one module of a
package that registers itself on import; the registry imports the package's modules the first time a name is
looked up, so adding a backend is adding a file. It leaves out modules named with a leading underscore: a
backend's own helpers, which may import torch at once (seconds that checking a config on a rerun must not pay).

A name is checked when the config is read (cheap: no file is opened), resolved to a Source before any work
(pipeline/core/source.py: where its model is, and the files whose hashes join the keys), and loaded from that
Source by the worker that uses it.

Installed packages add backends too: a module named by an entry point in the registry's group
(`speech_eval.voices`, `speech_eval.engines`, `speech_eval.measures`) is imported with the package's own modules
and registers itself the same way. The entry point's name is the family it registers; a plugin that fails to
import is named when its family is asked for, and leaves every other backend usable."""
from __future__ import annotations

import difflib
import importlib
import importlib.util
import pkgutil
import warnings
from typing import Any, Callable

from pipeline.core.source import Source
from pipeline.errors import ConfigError


def discover(package: str, plugin_group: str, skip: tuple[str, ...] = ("base",)) -> dict[str, str]:
    """Import the package's backend modules, then the plugins of the entry-point group; returns each plugin that
    failed to import, by its entry point's name, with what went wrong and how to fix it."""
    from importlib.metadata import entry_points

    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if info.name not in skip and not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")
    broken = {}
    for point in entry_points(group=plugin_group):
        try:
            point.load()
        except Exception as e:  # any fault of a third party's module: named, never fatal to the others
            dist = point.dist.name if point.dist else "its package"
            broken[point.name] = (f"the plugin {point.name!r} ({point.value}, entry point {plugin_group} of {dist}) "
                                  f"failed to import: {type(e).__name__}: {e}. Fix or reinstall {dist} "
                                  f"(pip install --force-reinstall {dist}), or uninstall it")
    return broken


class Registry:
    def __init__(self, package: str, key: str, example: str, plugin_group: str, skip: tuple[str, ...] = ("base",)):
        self.package, self.key, self.example, self.plugin_group, self.skip = package, key, example, plugin_group, skip
        self._broken: dict[str, str] = {}
        self._families: dict[str, tuple[Callable[..., Any], Callable[[str], None], tuple[str, ...]]] = {}
        self._resolvers: dict[str, Callable[..., Source]] = {}
        self._model_families: dict[str, str] = {}
        self._revisions: dict[str, Callable[[Any], str]] = {}
        self._discovered = False  # not the same as having families: a backend module may be imported directly

    def register(self, family: str, loader: Callable[..., Any], check: Callable[[str], None] | None = None,
                 names: tuple[str, ...] = (), resolve: Callable[..., Source] | None = None,
                 model_family: str = "", revision: Callable[[Any], str] | None = None,
                 arithmetic: Callable[[Any], str] | None = None) -> None:
        """`loader(source, ...)` builds the backend from its resolved Source. `names` lists every name of a
        closed family; otherwise `check(name)` raises ConfigError for a name the family cannot load.
        `resolve(spec, options, models_dir)` finds the model; without one, the name alone is the model.
        `model_family` names the model behind the backend, where several backends run one model and so share its
        blind spots (faster-whisper and openai-whisper both run Whisper); by default, the backend's own family.
        `revision(options)` names a revision of the backend's own computation under those options, where a
        change of this code changed what it outputs; "" (the default) for none. (`arithmetic` is its name before
        this one, still taken, with a note.)"""
        if arithmetic is not None:
            warnings.warn(f"{self.key} family {family!r}: register(arithmetic=...) is register(revision=...)",
                          DeprecationWarning, stacklevel=2)
            revision = revision or arithmetic
        self._families[family] = (loader, check or (lambda name: None), names)
        self._model_families[family] = model_family or family
        if revision:
            self._revisions[family] = revision
        if resolve:
            self._resolvers[family] = resolve

    def model_family(self, full: str) -> str:
        """The model family of `family:name`; an unknown family is its own (a user's trn has any name)."""
        self._discover()
        family = full.partition(":")[0]
        return self._model_families.get(family, family)

    def revision(self, full: str, options: Any) -> str:
        """The revision of `full`'s computation under `options` that joins its outputs' keys ("" for none)."""
        self._discover()
        revision = self._revisions.get(full.partition(":")[0])
        return revision(options) if revision else ""

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        self._broken = discover(self.package, self.plugin_group, self.skip)

    def families(self) -> list[str]:
        self._discover()
        return sorted(self._families)

    def names(self) -> list[str]:
        """Every name of the closed families, then `family:…` for the open ones."""
        self._discover()
        return [f"{family}:{name}" if name else f"{family}:…" for family, (_, _, names) in sorted(self._families.items())
                for name in (names or ("",))]

    def check(self, full: str) -> None:
        self._discover()
        family, sep, name = full.partition(":")
        if family in self._broken and family not in self._families:
            raise ConfigError(f"{self.key}: {full!r}: {self._broken[family]}")
        if not sep or family not in self._families or not name:
            near = f"{suggest(family, self._families)}:{name}" if sep and suggest(family, self._families) \
                else suggest(full, self.names())
            hint = f"did you mean {near}? " if near else ""
            raise ConfigError(f"{self.key}: unknown {full!r}; {hint}use family:name, one of "
                              f"{', '.join(self.names())} (e.g. {self.example})")
        _, check, names = self._families[family]
        if names and name not in names:
            near = suggest(full, [f"{family}:{n}" for n in names])
            raise ConfigError(f"{self.key}: unknown {full!r}; {f'did you mean {near}? ' if near else ''}"
                              f"available: {', '.join(self.names())}")
        check(name)

    def check_all(self, values: list[str]) -> None:
        for value in values:
            self.check(value)

    def resolve(self, full: str, options: Any, models_dir: str) -> Source:
        """Where `full`'s model is; ModelMissing or ModelDamaged (both ConfigError) when it cannot be used."""
        self.check(full)
        family = full.partition(":")[0]
        if family in self._resolvers:
            return self._resolvers[family](full, options, models_dir)
        return Source(spec=full, found="built in", path="", files=())

    def load(self, source: Source, *args: Any) -> Any:
        self._discover()  # a Ray worker loads a Source resolved elsewhere, without looking a name up first
        return self._families[source.spec.partition(":")[0]][0](source, *args)


def suggest(wrong: str, known) -> str:
    """The known name a typo most likely meant ('piper:jo' → 'piper:joe'), or "" when none is close."""
    near = difflib.get_close_matches(wrong, list(known), n=1, cutoff=0.75)
    return near[0] if near else ""


class Catalog:
    """Declarations by name (a measure, a statistic, a report section, a subcommand): each is one module of a
    package, or of an installed plugin (an entry point of `plugin_group`), that calls `register`. The modules are
    imported the first time the catalog is asked for, so adding one is adding a file; a plugin that fails to import
    is named when its name is asked for, and leaves the others usable."""

    def __init__(self, package: str, plugin_group: str, what: str, skip: tuple[str, ...] = ("base",)):
        self.package, self.plugin_group, self.what, self.skip = package, plugin_group, what, skip
        self._declared: dict[str, Any] = {}
        self._broken: dict[str, str] = {}
        self._discovered = False

    def register(self, declaration: Any) -> None:
        self._declared[declaration.name] = declaration

    def _discover(self) -> None:
        if not self._discovered:
            self._discovered = True
            self._broken = discover(self.package, self.plugin_group, self.skip)

    def get(self, name: str) -> Any:
        self._discover()
        if name in self._broken and name not in self._declared:
            raise ConfigError(f"{self.what}: {name!r}: {self._broken[name]}")
        if name not in self._declared:
            near = suggest(name, self._declared)
            raise ConfigError(f"{self.what}: unknown {name!r}; {f'did you mean {near}? ' if near else ''}"
                              f"available: {', '.join(self.names()) or 'none'}")
        return self._declared[name]

    def __contains__(self, name: str) -> bool:
        self._discover()
        return name in self._declared

    def own(self, name: str) -> Any | None:
        """`name` as the package's module of that name declares it (`compare-runs` in compare_runs.py), importing
        that module alone: running one command needs neither the others nor the config's engines, whose imports
        cost a tenth of a second and a tenth of the memory of a `score`. None where no such module declares it
        (a plugin's: the catalog finds it)."""
        module = f"{self.package}.{name.replace('-', '_')}"
        if not name.replace("-", "_").isidentifier() or importlib.util.find_spec(module) is None:
            return None
        importlib.import_module(module)
        return self._declared.get(name)

    def names(self) -> list[str]:
        self._discover()
        return list(self._declared)

    def all(self) -> list[Any]:
        self._discover()
        return list(self._declared.values())
