"""Configuration trees a repository writes attribute by attribute, in the yacs / CfgNode
style (``_C.MODEL.HRNET.STEM_INPLANES = 64``, ``cfg.MODEL.ROI_HEADS.NUM_CLASSES = 80``):
the values a made-up configuration object takes for the fields a constructor reads.

A constructor that reads ``cfg.MODEL.HRNET.STAGE2.NUM_CHANNELS`` from a parameter nothing
gives a value gets a namespace of the fields it reads (see ``arguments.synthesize``). A
field the repository's configuration code sets gets that value: a string, a flag, a list
(a loop over ``cfg.MODEL.HEAD.CHANNELS``), or a number msready has no guess for. A number
msready made up stays: the Cell proves the translation runs, and the repository's sizes
(512 channels, eight stacked convolutions) would only make it slower than its time limit.
A field read whole that is a node of the tree (``cfg.MODEL.HRNET.STAGE2`` handed to a
helper) gets the node's fields. The paths are matched from the root, whatever the root is
called (``_C`` where the defaults are written, ``cfg`` where they are read).
"""

from __future__ import annotations

from collections.abc import Iterable

from msready.analyzer.configvalues import ConfigValue as Setting
from msready.skeletons.arguments import NAMESPACE, is_size
from msready.skeletons.values import ConfigValue, ListValue


def _rank(setting: Setting) -> int:
    """Defaults first: a file named for defaults, then one named for configuration, then
    the rest (tests and scripts override single fields for their own cases)."""
    path = setting.path.lower()
    return 0 if "default" in path else 1 if "config" in path else 2


class ConfigTree:
    """The settings ``root.A.B... = <literal>`` of a repository, by their path below the
    root."""

    def __init__(self, settings: Iterable[Setting]) -> None:
        self.leaves: dict[tuple[str, ...], object] = {}
        self.inner: set[tuple[str, ...]] = set()
        chosen = sorted((s for s in settings if s.kind == "attribute" and s.owner is None),
                        key=_rank)
        for setting in chosen:
            parts = tuple(setting.name.split("."))
            if len(parts) < 3 or not all(p.isidentifier() for p in parts):
                continue  # ``args.lr = 0.1`` is one flat option, not a tree
            path = parts[1:]
            if path in self.leaves or path in self.inner:
                continue
            self.leaves[path] = setting.literal
            self.inner.update(path[:i] for i in range(1, len(path)))

    def fill(self, value: object, prefix: tuple[str, ...] = ()) -> object:
        """``value`` with the fields of its made-up namespaces set as the tree has them
        (the namespaces inside another object start again from the root)."""
        if isinstance(value, tuple):  # a list stays a list in the Cell's run
            items = (self.fill(item) for item in value)
            return ListValue(items) if isinstance(value, ListValue) else tuple(items)
        if not isinstance(value, ConfigValue) or value.is_class:
            return value
        if (value.module, value.name) != NAMESPACE:
            kwargs = tuple((k, self.fill(v)) for k, v in value.kwargs)
            return ConfigValue(value.module, value.name, value.fields, kwargs)
        return ConfigValue(value.module, value.name, self._fields(value.fields, prefix),
                           self._fields(value.kwargs, prefix))

    def _fields(self, items: tuple[tuple[str, object], ...], prefix: tuple[str, ...]
                ) -> tuple[tuple[str, object], ...]:
        filled: list[tuple[str, object]] = []
        for key, item in items:
            path = (*prefix, key)
            if path in self.leaves and not (is_size(item) and is_size(self.leaves[path])):
                item = self.leaves[path]
            elif isinstance(item, ConfigValue):
                item = self.fill(item, path)
            elif path in self.inner:  # a node read whole: all of it
                item = self.node(path)
            filled.append((key, item))
        return tuple(filled)

    def node(self, path: tuple[str, ...]) -> ConfigValue:
        """The node at ``path`` as a namespace of everything below it."""
        children = dict.fromkeys(p[len(path)] for p in (*self.leaves, *self.inner)
                                 if len(p) > len(path) and p[:len(path)] == path)
        fields = tuple((name, self.leaves[(*path, name)] if (*path, name) in self.leaves
                        else self.node((*path, name))) for name in children)
        return ConfigValue(NAMESPACE[0], NAMESPACE[1], fields, fields)
