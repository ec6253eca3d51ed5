# The vk-provider image: the `vk-provider` command and its runtime dependencies, nothing else.
#
#   pip wheel --no-deps . -w dist/wheels   # the project's wheel
#   pip download --no-deps --only-binary=:all: --require-hashes \
#     -r requirements/image.lock -d dist/wheels   # its dependencies, as pinned
#   docker build -t vk-provider:0.1.0 .
#
# or, with no registry and no package index during the build, scripts/build-image.sh
# (`make image`), which makes a local Debian base with python3 and passes it as
# PYTHON_IMAGE. The dependencies are the versions requirements/image.lock pins with their
# sha256 hashes (scripts/lock-requirements.sh, `make lock`): the build installs exactly those
# from dist/wheels with `pip install --require-hashes --no-deps` (a wheel whose hash is not
# in the lock fails the build), then the project's wheel without dependencies, and `pip check`
# fails the build if the lock does not satisfy the project's requirements. All into a
# virtualenv, with no index (`--no-index`); pip and setuptools are dropped from it afterwards,
# so the image has no sources, tests, compilers, dev tools or pip; the wheels must be for the
# base's python minor (3.11 here).
#
# The image runs as the non-root user 10001 (group 10001). The provider talks to the
# Docker engine through its socket (/var/run/docker.sock, root:docker 0660, with a docker
# group id that differs per host): give the container that group as a supplementary group
# (`docker run --group-add <gid of the socket>`, Kubernetes:
# securityContext.supplementalGroups: [<gid>]). Access to the Docker socket is
# root-equivalent on that host anyway. The provider also writes per-container files
# (termination messages) under docker.stateDir on the engine's host for the engine to
# bind-mount: that directory must be writable by uid 10001. With a remote engine (config
# docker.host tcp://...) neither applies. No secrets are baked in: the kubeconfig or
# service account token, Docker TLS certificates and the kubelet serving certificate are
# all mounted at run time.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="vk-provider" \
      org.opencontainers.image.description="A virtual-kubelet provider that runs the pods bound to a virtual Node as Docker containers" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/vk-provider/bin:$PATH
COPY requirements/image.lock /tmp/image.lock
COPY dist/wheels /tmp/wheels
RUN python3 -m venv /opt/vk-provider \
    && /opt/vk-provider/bin/pip install --no-cache-dir --no-index --find-links /tmp/wheels \
       --require-hashes --no-deps -r /tmp/image.lock \
    && /opt/vk-provider/bin/pip install --no-cache-dir --no-index --find-links /tmp/wheels --no-deps \
       "vk-provider==${VERSION}" \
    && /opt/vk-provider/bin/pip check \
    && /opt/vk-provider/bin/python -m pip uninstall --yes --quiet pip setuptools \
    && rm -rf /tmp/wheels /tmp/image.lock \
    && groupadd --gid 10001 vk-provider \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin vk-provider
USER 10001:10001
# The kubelet API (logs, exec, attach, port-forward, stats): kubeletServer.listen.
EXPOSE 10250
ENTRYPOINT ["vk-provider"]
CMD ["run", "--config", "/etc/vk-provider/config.yaml"]
