# gbft-action: the GitHub Action image. Multi-arch: builds unchanged on amd64 and arm64 runners.
# BASE: another tag of the same Debian (scripts/docker-setup.sh builds arm64 from a local one).
ARG BASE=debian:bookworm-slim
FROM ${BASE}

# The toolchain builds the engine inside the image (input build-command), with the image's own
# Python, compilers and libc: a wheel built on the runner would not install here (cp312 against
# 3.11, a newer glibc).  git finds the merge base; ccache serves the PR and base builds.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-pip python3-dev ca-certificates \
        build-essential cmake ccache git \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/gbft
COPY pyproject.toml README.md ./
COPY gbft_action ./gbft_action

# A CA bundle may be given as a BuildKit secret (behind a TLS-inspecting proxy);
# without it pip uses the image's certificates, as on a GitHub runner.
RUN --mount=type=secret,id=ca,required=false \
    python3 -m venv /opt/venv \
 && if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
 && /opt/venv/bin/pip install --no-cache-dir --upgrade pip setuptools wheel \
 && /opt/venv/bin/pip install --no-cache-dir -e ".[all]" \
 && /opt/venv/bin/gbft corpus check gbft_action/corpora/tensorflow-mnn.yaml > /dev/null

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    TF_CPP_MIN_LOG_LEVEL=2 \
    TF_ENABLE_ONEDNN_OPTS=1
ENTRYPOINT ["gbft", "action"]
