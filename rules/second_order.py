"""Second-order gradient rules (4xx): double backward, the ops on its derivative chain
without measured second-order support, MAML-style inner loops, and the helpers, callers and
``backward()`` calls a double backward drags into the training step.

The rules here hold the metadata, documentation and messages. The work lives beside them:
:mod:`msready.rules.second_order_sites` finds the double-backward sites, loads the measured
second-order support and follows callers; :mod:`msready.rules.second_order_chain` builds
each site's derivative chain; :mod:`msready.rules.second_order_maml` follows one function's
data flow for the MAML rule; :mod:`msready.rules.second_order_examples` holds the examples.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Iterator
from functools import lru_cache
from importlib import resources

from msready.analyzer.findings import Category, Confidence, Finding, Location, Scope, Severity
from msready.analyzer.repo import RepositoryModel, ResolvedCall
from msready.rules.base import RepoRule
from msready.rules.second_order_chain import Chain, ChainOp, analyse, chain_path
from msready.rules.second_order_examples import (
    BACKWARD_INVALID,
    BACKWARD_VALID,
    CALLER_INVALID,
    CALLER_VALID,
    DOUBLE_INVALID,
    DOUBLE_VALID,
    MAML_INVALID,
    MAML_VALID,
    OP_INVALID,
    OP_VALID,
)
from msready.rules.second_order_maml import MamlFlow
from msready.rules.second_order_sites import Site, load_measurements

_CONFIDENCE = {"high": Confidence.HIGH, "medium": Confidence.MEDIUM, "low": Confidence.LOW}


# Reformulations with ops that do have second-order gradients, by MindSpore API name
# (lower-cased, underscores dropped): data with its reasons.
@lru_cache(maxsize=1)
def _rewrites() -> dict[str, str]:
    """``analyzer/data/second_order_rewrites.toml``: reformulation per op, with its reason."""
    text = resources.files("msready.analyzer").joinpath(
        "data/second_order_rewrites.toml").read_text(encoding="utf-8")
    return {key: str(entry["rewrite"]) for key, entry in tomllib.loads(text).items()}


_STATUS_WORDS = {"pass": "second order runs", "fail": "second order fails",
                 "unmeasured": "unmeasured"}


def _location(rc: ResolvedCall) -> Location:
    return Location.at(rc.file.path, rc.call.span, rc.call.cell)


def _where(rc: ResolvedCall) -> str:
    """``losses.py (in `gradient_penalty`)``: the file and the enclosing function, never a
    line number, so that the message (and the finding's identity) survives moved code."""
    module = rc.file.module
    caller = rc.call.caller
    if module and caller.startswith(module + "."):
        caller = caller[len(module) + 1:]
    if not caller or caller == module or caller == "<module>":
        return rc.file.path
    return f"{rc.file.path} (in `{caller}`)"


def _summary(repo: RepositoryModel, chain: Chain, backend: str, measured_on: str) -> str:
    """``through Critic.forward → Block.forward: 7 torch APIs, 1 without second-order
    support on cpu (torch.nn.LogSoftmax), 2 unmeasured``."""
    apis = chain.apis()
    failing = sorted({op.api for op in chain.failing()})
    unknown = {op.api for op in chain.ops if op.status == "unmeasured"} - set(failing)
    not_in_table = sorted({op.api for op in chain.ops if not op.in_table} & unknown)
    no_target = sorted({op.api for op in chain.ops if op.in_table and op.target is None}
                       & unknown)
    unmeasured = sorted(unknown - set(not_in_table) - set(no_target))
    path = chain_path(repo, chain)
    where = f"through {path}: " if path else "in this function: "
    parts = [f"{len(apis)} torch API{'s' if len(apis) != 1 else ''}"]
    if failing:
        parts.append(f"{len(failing)} without second-order support on {backend} "
                     f"({', '.join(failing)})")
    else:
        parts.append(f"none measured as failing on {backend}")
    if backend != measured_on:
        parts[-1] += (f" (measured on {measured_on.upper()}; only missing bprops carry over "
                      "to other backends)")
    if unmeasured:
        parts.append(f"{len(unmeasured)} unmeasured")
    if no_target:
        parts.append(f"{len(no_target)} without a MindSpore target on {backend} "
                     f"({', '.join(no_target[:3])}{', …' if len(no_target) > 3 else ''})")
    if not_in_table:
        parts.append(f"{len(not_in_table)} not in the table "
                     f"({', '.join(not_in_table[:3])}{', …' if len(not_in_table) > 3 else ''})")
    text = where + ", ".join(parts)
    if chain.unresolved:
        text += f"; msready could not follow {', '.join(sorted(set(chain.unresolved)))}"
    listed = _api_list(chain)
    return text + (f". APIs on the chain: {listed}" if listed else "")


def _api_list(chain: Chain, limit: int = 12) -> str:
    """``torch.nn.Conv2d → mindspore.nn.Conv2d (pass), ...`` for the chain's APIs."""
    first: dict[str, ChainOp] = {}
    for op in chain.ops:
        if op.api not in first or op.status == "fail":
            first[op.api] = op
    items = []
    for api in sorted(first, key=lambda a: (first[a].status != "fail", a))[:limit]:
        op = first[api]
        if not op.in_table:
            items.append(f"{api} (not in the table)")
        elif op.target is None:
            items.append(f"{api} (no MindSpore target)")
        else:
            items.append(f"{api} → {op.target} ({_STATUS_WORDS[op.status]})")
    more = len(first) - limit
    return ", ".join(items) + (f", and {more} more" if more > 0 else "")


def _site_phrase(site: Site) -> str:
    short = site.api.replace("torch.Tensor.", "Tensor.")
    if site.flag.value == "maybe":
        return f"`{short}` with {site.how} (second order whenever that is true)"
    return f"`{short}` ({site.how})"


class DoubleBackward(RepoRule):
    """Flags a gradient that is differentiated again: ``torch.autograd.grad`` or
    ``backward`` with ``create_graph=True`` (keyword or positional), the second-order
    helpers of ``torch.autograd.functional`` and nested ``torch.func`` transforms. The
    message lists the model code on the derivative chain and how many of its torch APIs
    lack measured second-order support on the chosen backend.

    MindSpore differentiates twice only when every operator on the chain has a bprop that
    is itself differentiable; several common ones (log_softmax, softmax, GELU, ELU, GroupNorm,
    average and max pooling on CPU) do not, and the failure only shows at run time.

    Take the inner gradient with ``mindspore.grad`` inside the function that the outer
    ``mindspore.grad`` / ``mindspore.value_and_grad`` differentiates, and fix every op the
    related MS402 findings name (custom ``bprop``, reformulation, or first-order
    approximation).
    """

    id = "MS401"
    name = "double-backward"
    category = Category.SECOND_ORDER
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    scope = Scope.ANYWHERE
    VALID = DOUBLE_VALID
    INVALID = DOUBLE_INVALID

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """One finding per double-backward site, with its chain summary."""
        analysis = analyse(repo)
        backend = analysis.builder.backend
        for site, chain in analysis.sites:
            confidence = _CONFIDENCE.get(site.rc.call.confidence, Confidence.MEDIUM)
            if site.flag.value == "maybe" and confidence is Confidence.HIGH:
                confidence = Confidence.MEDIUM
            failing = chain.failing()
            yield Finding(
                rule=self.id, rule_name=self.name, category=self.category,
                severity=Severity.ERROR if failing else self.severity,
                confidence=confidence, location=_location(site.rc), symbol=site.api,
                message=(f"{_site_phrase(site)} differentiates a gradient again "
                         f"(second order) "
                         f"{_summary(repo, chain, backend, load_measurements().backend)}."),
                suggestion=("In MindSpore, take the inner gradient with `mindspore.grad` "
                            "inside the function the outer `mindspore.grad` / "
                            "`mindspore.value_and_grad` differentiates; every op on the "
                            "chain needs a differentiable bprop"
                            + (", so first fix the ops flagged MS402." if failing else ".")),
                function=site.function, scope=self.scope,
            )


def _op_suggestion(op: ChainOp) -> str:
    key = (op.target or op.api).rsplit(".", 1)[-1].lower().replace("_", "")
    rewrite = _rewrites().get(key)
    hint = f" (here: {rewrite})" if rewrite else ""
    return ("Give it a custom bprop (wrap it in a `mindspore.nn.Cell` whose "
            "`bprop(self, x, out, dout)` uses only ops with their own gradients), "
            f"reformulate it with supported ops{hint}, or accept the first-order "
            "approximation (stop the gradient through the inner derivative, as "
            "create_graph=False does).")


class NoSecondOrderOp(RepoRule):
    """Flags a torch API on a derivative chain whose MindSpore target, measured on the
    installed MindSpore, fails when differentiated twice (``grad(grad(f))``), at the op's
    call or constructor site.

    The failure ("LogSoftmaxGrad's bprop not defined", "MaxPoolGradGrad does not support on
    CPU") appears only when the second-order step runs, deep in training; the support was
    measured by ``tools/measure_second_order.py`` on CPU.

    Wrap the op in a Cell with a custom ``bprop`` written with differentiable ops,
    reformulate it with supported ops (log_softmax as ``x - logsumexp(x)``), or use the
    first-order approximation of the penalty or meta-gradient.
    """

    id = "MS402"
    name = "no-second-order-op"
    category = Category.SECOND_ORDER
    severity = Severity.ERROR
    confidence = Confidence.HIGH
    scope = Scope.ANYWHERE
    VALID = OP_VALID
    INVALID = OP_INVALID

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """One finding per failing op site, however many chains it is on."""
        analysis = analyse(repo)
        backend = analysis.builder.backend
        measured = load_measurements()
        confidence = Confidence.HIGH if backend == measured.backend else Confidence.MEDIUM
        seen: set[tuple[str, int, int, str]] = set()
        for site, chain in analysis.sites:
            for op in chain.failing():
                key = (op.path, op.span.line, op.span.column, op.api)
                if key in seen:
                    continue
                seen.add(key)
                version = f"MindSpore {measured.mindspore_version}".strip()
                yield Finding(
                    rule=self.id, rule_name=self.name, category=self.category,
                    severity=self.severity, confidence=confidence,
                    location=Location.at(op.path, op.span, op.cell), symbol=op.api,
                    message=(f"`{op.api}` maps to `{op.target}`, whose second-order gradient "
                             f"fails on {backend} ({version}, measured on "
                             f"{measured.backend.upper()}: {op.error}); it is on the "
                             f"derivative chain of the double backward at {_where(site.rc)}."),
                    suggestion=_op_suggestion(op),
                    function=None, scope=self.scope,
                )


class CallsSecondOrderHelper(RepoRule):
    """Flags each call of a repository function that takes a second-order gradient (a
    gradient penalty helper, a meta-learning step), so the training step that calls it is
    marked too.

    The second-order work happens where the helper's result is back-propagated, in the
    caller's training step; porting the helper alone does not make that step run in
    MindSpore.

    Move the call inside the function given to ``mindspore.value_and_grad`` so the
    helper's inner ``mindspore.grad`` is differentiated again, and check the ops of the
    chain (MS402).
    """

    id = "MS404"
    name = "calls-second-order-helper"
    category = Category.SECOND_ORDER
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    scope = Scope.ANYWHERE
    VALID = CALLER_VALID
    INVALID = CALLER_INVALID

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """One finding per call site of a helper holding a double backward."""
        analysis = analyse(repo)
        seen: set[tuple[str, int, int]] = set()
        for site, chain in analysis.sites:
            helper = site.function
            for rc, _ in analysis.builder.propagation(site):
                key = (rc.file.path, rc.call.span.line, rc.call.span.column)
                if key in seen:
                    continue
                seen.add(key)
                name = f"`{repo.short_name(helper)}`"
                called = [c for c in rc.callees if c != helper]
                if helper not in rc.callees and called:
                    name = f"`{repo.short_name(called[0])}` calls {name}, which"
                yield Finding(
                    rule=self.id, rule_name=self.name, category=self.category,
                    severity=self.severity, confidence=self.confidence,
                    location=_location(rc), symbol=helper,
                    message=(f"{name} takes a second-order gradient ({_site_phrase(site)} "
                             f"at {_where(site.rc)}); whatever back-propagates through this call "
                             f"is second order ({len(chain.apis())} torch APIs on the chain, "
                             f"{len({o.api for o in chain.failing()})} without support on "
                             f"{analysis.builder.backend})."),
                    suggestion=("Call it inside the function given to "
                                "`mindspore.value_and_grad`, so its inner `mindspore.grad` is "
                                "differentiated again, and fix the MS402 ops of its chain."),
                    function=rc.call.caller, scope=self.scope,
                )


def _backward_sites(repo: RepositoryModel) -> Iterator[tuple[ResolvedCall, Site]]:
    """Each ``backward()`` that back-propagates through a double-backward site, in the
    site's own function or in the callers its result is passed up to."""
    analysis = analyse(repo)
    for site, _ in analysis.sites:
        found = analysis.builder.backward_after(site.function, site.span)
        if found is not None and found is not site.rc:
            yield found, site
        for _, backward in analysis.builder.propagation(site):
            if backward is not None:
                yield backward, site


class BackwardThroughSecondOrder(RepoRule):
    """Flags the ``backward()`` that back-propagates through a gradient taken with
    ``create_graph=True``: the first ``backward()`` after the double-backward site in its
    function, or after the call of the helper that holds it in each caller.

    That backward is where the second derivative is actually computed; in MindSpore it
    becomes the outer ``mindspore.value_and_grad``, and it fails at run time when an op on
    the chain has no second-order gradient.

    Compute the whole loss, penalty included, inside the function given to
    ``mindspore.value_and_grad`` and apply the optimizer to its gradients.
    """

    id = "MS405"
    name = "backward-through-second-order"
    category = Category.SECOND_ORDER
    severity = Severity.WARNING
    confidence = Confidence.MEDIUM
    scope = Scope.ANYWHERE
    VALID = BACKWARD_VALID
    INVALID = BACKWARD_INVALID

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """One finding per such ``backward()``."""
        seen: set[tuple[str, int, int]] = set()
        for rc, site in _backward_sites(repo):
            key = (rc.file.path, rc.call.span.line, rc.call.span.column)
            if key in seen:
                continue
            seen.add(key)
            yield Finding(
                rule=self.id, rule_name=self.name, category=self.category,
                severity=self.severity, confidence=self.confidence,
                location=_location(rc), symbol="torch.Tensor.backward",
                message=(f"This backward() back-propagates through the gradient taken at "
                         f"{_where(site.rc)} ({_site_phrase(site)} in "
                         f"`{repo.short_name(site.function)}`): it computes second "
                         f"derivatives."),
                suggestion=("Compute the loss, including that gradient term, inside the "
                            "function given to `mindspore.value_and_grad` and apply the "
                            "optimizer to the gradients it returns."),
                function=rc.call.caller, scope=self.scope,
            )


class MamlInnerLoop(MamlFlow):
    """Flags a MAML-style inner loop: gradients from ``torch.autograd.grad`` (or
    ``torch.func.grad``), walked weight by weight, turned into updated weights
    (``w - lr * g``) that are fed to a functional forward
    (``model.functional_forward(x, fast_weights)``, ``functional_call(model, params, x)``)
    or returned for one, and says whether it is first order (no ``create_graph``) or
    second order.

    A second-order inner loop needs every op of the model to support second-order
    differentiation in MindSpore, and the functional forward with explicit weights has to
    be written for the Cell (MindSpore Cells hold their parameters).

    Write the inner step with ``mindspore.grad`` over a function of the weights and run the
    Cell's computation with the updated weights passed explicitly (``ops`` functionals); keep
    it first order (``ops.stop_gradient`` on the inner gradients) unless the meta-gradient
    must flow through the inner step.
    """

    id = "MS403"
    name = "maml-inner-loop"
    category = Category.SECOND_ORDER
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    scope = Scope.ANYWHERE
    VALID = MAML_VALID
    INVALID = MAML_INVALID
