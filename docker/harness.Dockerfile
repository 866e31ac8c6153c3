# The harness image: arenac itself, for the pods of a cluster's harness namespace (the bundle chart's
# fault-init Job and load generator run `arenac harness inject|loadgen`, its grader `arenac grade`;
# docs/kubernetes.md, "The harness commands").
#   docker build -f docker/harness.Dockerfile -t ghcr.io/arenac/harness:0.1.0 .
# The build context is the repository's root; its .dockerignore admits only what is copied below
# (no .venv, build/, runs/, qualification/, tests or tasks: tests/harness/test_dockerfiles.py checks it).
# The image holds the harness: the application's own image is library/substrates/spine/app/Dockerfile.
FROM python:3.11.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /build
COPY pyproject.toml README.md ./
COPY arenac ./arenac
COPY grammar ./grammar
COPY library ./library
# arenac with the `local` extra: the harness's datastore and HTTP clients, the load generator's
# histograms, and what `arenac grade` (the chart's grader) checks for; and the `kubernetes` extra: the
# harness pod's `harness episode --target-namespace` lists the substrate's pods, reads its ConfigMaps
# and restarts its workloads through the API (arenac/runner/kube/pod_backend.py); the build directory goes, so
# the image holds one copy of the code, the installed one. The run directory is the one the
# chart's grader grades (`arenac grade /var/arenac/run`), owned by the unprivileged user.
RUN pip install --no-cache-dir ".[local,kubernetes]" \
    && cd / && rm -rf /build \
    && arenac harness --help > /dev/null \
    && useradd --uid 10002 --no-create-home --shell /usr/sbin/nologin arenac \
    && mkdir -p /var/arenac/run \
    && chown 10002:10002 /var/arenac/run

WORKDIR /
USER 10002
ENTRYPOINT ["arenac"]
CMD ["--help"]
