# The image the launch configs run (tpu_configs/launch/*.py: xpk.docker_image).
# Build and push it with `bash launch/build_image.sh` (see its --help).
#
#   stage  base: Python 3.12, exactly requirements.txt (pip --no-deps, then
#          pip check), the project tree at /app on PYTHONPATH.
#   stage  cpu:  base as is; JAX on CPU, as in the venv of launch/setup.sh.
#   stage  tpu:  cpu + libtpu, the one package that differs from the CPU
#          requirements (jax's `tpu` extra for jax 0.12.0.1 asks for
#          jaxlib 0.12.0.1, pinned already, requests, pinned already, and
#          libtpu 0.0.50.*). The default target.
#
# The entrypoint (launch/entrypoint.sh) runs `python -m MODULE ARGS...`;
# with no arguments it prints its help. xpk replaces it with its own
# `bash -c "--command"`, which runs from /app too.

ARG PYTHON_IMAGE=python:3.12-slim-bookworm

FROM ${PYTHON_IMAGE} AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    DECOUPLE_GCLOUD=TRUE
WORKDIR /app
RUN python -m pip install pip==26.3
COPY requirements.txt /app/requirements.txt
RUN python -m pip install --no-deps -r /app/requirements.txt \
    && python -m pip check
COPY . /app
RUN chmod +x /app/launch/entrypoint.sh
ENTRYPOINT ["/app/launch/entrypoint.sh"]
CMD ["--help"]

FROM base AS cpu
ENV JAX_PLATFORMS=cpu

FROM base AS tpu
ARG LIBTPU_VERSION=0.0.50
RUN python -m pip install --no-deps libtpu==${LIBTPU_VERSION} \
    && python -m pip check
