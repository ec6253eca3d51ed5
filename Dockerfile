# The vk-provider image: the `vk-provider` command and its runtime dependencies, nothing else.
#
#   docker build -t vk-provider:0.1.0 .
#
# Stage 1 builds the project's wheel; stage 2 installs it into a clean python:3.11-slim,
# so the image has no sources, tests, compilers or dev tools.
#
# The image runs as root on purpose: the provider talks to the Docker engine through its
# socket (/var/run/docker.sock, root:docker 0660, with a docker group id that differs per
# host) and writes per-container files (termination messages) under docker.stateDir on the
# engine's host for the engine to bind-mount. Access to the Docker socket is root-equivalent
# on that host anyway. With a remote engine (config docker.host tcp://...) nothing needs
# root: run it with `--user 65532` (Helm: securityContext.runAsUser). No secrets are baked
# in: the kubeconfig or service account token, Docker TLS certificates and the kubelet
# serving certificate are all mounted at run time.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
# pyproject.toml names README.md as the package's readme: the build needs it.
COPY pyproject.toml README.md ./
COPY vk_provider ./vk_provider
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="vk-provider" \
      org.opencontainers.image.description="A virtual-kubelet provider that runs the pods bound to a virtual Node as Docker containers" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-cache-dir /tmp/wheels/*.whl && rm -rf /tmp/wheels
# The kubelet API (logs, exec, attach, port-forward, stats): kubeletServer.listen.
EXPOSE 10250
ENTRYPOINT ["vk-provider"]
CMD ["run", "--config", "/etc/vk-provider/config.yaml"]
