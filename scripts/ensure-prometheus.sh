#!/usr/bin/env bash
# Make sure Prometheus and promtool are installed, for the monitoring tests
# (tests/e2e/test_monitoring_real.py, docs/metrics.md): Debian's `prometheus` package
# (2.42 on bookworm), which brings both. The tests run Prometheus as their own process with
# their own configuration; the package's service is not used. Idempotent.
set -euo pipefail
# shellcheck source=scripts/lib/apt-ensure.sh
. "$(dirname "$0")/lib/apt-ensure.sh"
apt_ensure ensure-prometheus "prometheus promtool" prometheus
