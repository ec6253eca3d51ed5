"""Reading the provider's own metrics in tests: one sample of a `ProviderMetrics`, or the metric
families of a scraped `/metrics` text (prometheus-client's parser, as a scraper reads it)."""

from __future__ import annotations

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from vk_provider.metrics import ProviderMetrics


def sample(metrics: ProviderMetrics, name: str, **labels: str) -> float:
    """The value of one series (0 when it has no sample yet)."""
    return metrics.registry.get_sample_value(name, labels) or 0.0


def families(text: str) -> dict[str, Metric]:
    """The scraped families by name (a counter's name without `_total`, as the parser gives it)."""
    return {family.name: family for family in text_string_to_metric_families(text)}


def total(family: Metric, suffix: str = "", **labels: str) -> float:
    """The sum of the family's samples named `<family><suffix>` whose labels include `labels`."""
    return sum(
        s.value
        for s in family.samples
        if s.name == family.name + suffix and labels.items() <= s.labels.items()
    )
