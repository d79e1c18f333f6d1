#!/usr/bin/env bash
# Builds the image of this tree (Dockerfile at the repo root) and pushes it to
# the registry the launch configs name (tpu_configs/launch/*.py:
# xpk.docker_image), also tagged with the commit, so a workload can pin it.
#
#   bash launch/build_image.sh                 # build the tpu stage, push
#   bash launch/build_image.sh --dry_run       # print the commands only
#   bash launch/build_image.sh --target=cpu --no_push --tool=podman
#
# Flags: --image=REF (default below), --target=tpu|cpu, --tool=docker|podman
# (default: docker if on PATH, else podman), --libtpu=VERSION (build arg
# LIBTPU_VERSION, default the Dockerfile's), --no_push, --dry_run.
# Pushing to gcr.io/Artifact Registry needs `gcloud auth configure-docker`
# once on the building machine.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="gcr.io/search-agent/search-agent:latest"
TARGET="tpu"
TOOL=""
LIBTPU=""
PUSH=1
DRY_RUN=0

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }

for arg in "$@"; do
  case "$arg" in
    --image=*) IMAGE="${arg#*=}" ;;
    --target=*) TARGET="${arg#*=}" ;;
    --tool=*) TOOL="${arg#*=}" ;;
    --libtpu=*) LIBTPU="${arg#*=}" ;;
    --no_push) PUSH=0 ;;
    --dry_run) DRY_RUN=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "build_image: unknown argument $arg" >&2; usage >&2; exit 2 ;;
  esac
done
case "$TARGET" in
  tpu | cpu) ;;
  *) echo "build_image: --target must be tpu or cpu, got $TARGET" >&2; exit 2 ;;
esac
if [ -z "$TOOL" ]; then
  if command -v docker >/dev/null 2>&1; then TOOL=docker; else TOOL=podman; fi
fi
case "$TOOL" in
  docker | podman) ;;
  *) echo "build_image: --tool must be docker or podman, got $TOOL" >&2; exit 2 ;;
esac

repo="${IMAGE%:*}"
[ "$repo" != "$IMAGE" ] && [[ "${IMAGE##*:}" != */* ]] || repo="$IMAGE"
tags=("$IMAGE")
if rev=$(git rev-parse --short=12 HEAD 2>/dev/null); then
  git diff --quiet HEAD 2>/dev/null || rev="$rev-dirty"
  tags+=("$repo:git-$rev")
fi

build=("$TOOL" build --file=Dockerfile "--target=$TARGET")
[ -n "$LIBTPU" ] && build+=("--build-arg=LIBTPU_VERSION=$LIBTPU")
for t in "${tags[@]}"; do build+=("--tag=$t"); done
build+=(.)
cmds=("$(printf '%q ' "${build[@]}")")
if [ "$PUSH" = 1 ]; then
  for t in "${tags[@]}"; do cmds+=("$(printf '%q ' "$TOOL" push "$t")"); done
fi

for c in "${cmds[@]}"; do
  if [ "$DRY_RUN" = 1 ]; then
    echo "${c% }"
  else
    echo "+ ${c% }" >&2
    eval "$c"
  fi
done
