#!/usr/bin/env bash
# Downloads the real datasets memsweep can train on, from their canonical
# sources, and checks each download against its published MD5:
#   DEST/mnist/          train-images-idx3-ubyte.gz … t10k-labels-idx1-ubyte.gz
#   DEST/fashion-mnist/  the same four names
#   DEST/cifar-10/       data_batch_1.bin … data_batch_5.bin, test_batch.bin,
#                        batches.meta.txt (from the binary-version tarball)
#
# Usage: ci/fetch-datasets.sh [DEST]     (DEST defaults to data/ under the
# working directory, which is where memsweep looks when neither --data-dir nor
# MEMSWEEP_DATA is given.)
#
# Files already present with the right checksum are not downloaded again.
# Sources can be replaced (a local mirror, a CI cache; curl also takes
# file:// URLs) with space-separated base URLs in MEMSWEEP_MNIST_MIRRORS and
# MEMSWEEP_FASHION_MNIST_MIRRORS, and a URL in MEMSWEEP_CIFAR10_URL: the
# checksums stay the published ones.
set -euo pipefail

# Published MD5s of the .gz files (see ../shared/datasets/README.md). The
# tables are used through a nameref, which shellcheck does not follow.
# shellcheck disable=SC2034
declare -A MNIST_MD5=(
  [train-images-idx3-ubyte.gz]=f68b3c2dcbeaaa9fbdd348bbdeb94873
  [train-labels-idx1-ubyte.gz]=d53e105ee54ea40749a09fcbcd1e9432
  [t10k-images-idx3-ubyte.gz]=9fb629c4189551a2d022fa330f9573f3
  [t10k-labels-idx1-ubyte.gz]=ec29112dd5afa0611ce80d1b7f02629c
)
# shellcheck disable=SC2034
declare -A FASHION_MNIST_MD5=(
  [train-images-idx3-ubyte.gz]=8d4fb7e6c68d591d4c3dfef9ec88bf0d
  [train-labels-idx1-ubyte.gz]=25c81989df183df01b3e8a0aad5dffbe
  [t10k-images-idx3-ubyte.gz]=bef4ecab320f06d8554ea6380940ec79
  [t10k-labels-idx1-ubyte.gz]=bb300cfdad3c16e7a12a480ee83cd310
)
IDX_FILES=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)

CIFAR10_TARBALL=cifar-10-binary.tar.gz
CIFAR10_MD5=c32a1d4ab5d03f1284b67883e8d87530
CIFAR10_FILES=(data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin test_batch.bin
  batches.meta.txt)
# Checksums of the extracted files, written after extracting a verified
# tarball, so that a later run can tell they are intact without the tarball.
CIFAR10_MANIFEST=.fetched.sha256

log() { echo "fetch-datasets: $*"; }
die() {
  echo "fetch-datasets: error: $*" >&2
  exit 1
}

md5_of() { md5sum "$1" | cut -d' ' -f1; }

has_md5() { [[ -f "$1" && "$(md5_of "$1")" == "$2" ]]; }

# download URL OUT: curl if present, else wget; fails on HTTP errors.
download() {
  local url=$1 out=$2
  if command -v curl > /dev/null; then
    curl --fail --silent --show-error --location --retry 3 --connect-timeout 30 --output "$out" "$url"
  elif command -v wget > /dev/null; then
    wget --quiet --tries=3 --timeout=30 --output-document="$out" "$url"
  else
    die "neither curl nor wget is installed"
  fi
}

# fetch_checked FILE MD5 BASE_URL...: FILE from the first base URL that serves
# it with the right checksum. A partial or wrong download never takes FILE's
# name, so an interrupted run leaves nothing that looks complete.
fetch_checked() {
  local file=$1 md5=$2
  shift 2
  local name part
  name=$(basename "$file")
  if has_md5 "$file" "$md5"; then
    log "$file: present, checksum ok"
    return 0
  fi
  [[ -e "$file" ]] && log "$file: present but its MD5 is $(md5_of "$file"), expected $md5: downloading again"
  part="$file.part"
  for base in "$@"; do
    log "$file: downloading ${base%/}/$name"
    if ! download "${base%/}/$name" "$part"; then
      log "$file: download from $base failed"
      continue
    fi
    if has_md5 "$part" "$md5"; then
      mv -f "$part" "$file"
      log "$file: checksum ok"
      return 0
    fi
    log "$file: MD5 of the download from $base is $(md5_of "$part"), expected $md5"
  done
  rm -f "$part"
  die "$file: no source gave the expected file (tried: $*)"
}

# fetch_idx_dataset FOLDER MD5_TABLE_NAME BASE_URL...
fetch_idx_dataset() {
  local folder=$1
  local -n md5s=$2
  shift 2
  mkdir -p "$folder"
  for name in "${IDX_FILES[@]}"; do
    fetch_checked "$folder/$name" "${md5s[$name]}" "$@"
  done
}

cifar10_present() {
  local folder=$1
  for name in "${CIFAR10_FILES[@]}"; do
    [[ -f "$folder/$name" ]] || return 1
  done
  [[ -f "$folder/$CIFAR10_MANIFEST" ]] && (cd "$folder" && sha256sum --check --quiet --status "$CIFAR10_MANIFEST")
}

# extract_cifar10 TARBALL FOLDER: the tarball's cifar-10-batches-bin/ files
# into FOLDER, raw, plus the manifest of their checksums.
extract_cifar10() {
  local tarball=$1 folder=$2 staging
  staging=$(mktemp -d "$folder/.extract.XXXXXX")
  tar -xzf "$tarball" -C "$staging"
  for name in "${CIFAR10_FILES[@]}"; do
    [[ -f "$staging/cifar-10-batches-bin/$name" ]] || {
      rm -rf "$staging"
      die "$tarball: has no cifar-10-batches-bin/$name"
    }
  done
  for name in "${CIFAR10_FILES[@]}"; do
    mv -f "$staging/cifar-10-batches-bin/$name" "$folder/$name"
  done
  rm -rf "$staging"
  (cd "$folder" && sha256sum "${CIFAR10_FILES[@]}" > "$CIFAR10_MANIFEST")
  # memsweep reads NAME before NAME.gz, so an older compressed copy (a subset,
  # say) is shadowed now; say so rather than delete someone's file.
  for name in "${CIFAR10_FILES[@]}"; do
    [[ -e "$folder/$name.gz" ]] && log "$folder/$name.gz: also present; memsweep reads $name (the full batch) first"
  done
  return 0
}

fetch_cifar10() {
  local folder=$1 url=$2
  mkdir -p "$folder"
  if cifar10_present "$folder"; then
    log "$folder: present, checksums ok"
    return 0
  fi
  # The tarball is kept only while it is needed (it is 162 MB); one left in
  # the folder by hand is used if its checksum is right.
  local tarball="$folder/$CIFAR10_TARBALL"
  fetch_checked "$tarball" "$CIFAR10_MD5" "${url%/*}"
  log "$tarball: extracting into $folder"
  extract_cifar10 "$tarball" "$folder"
  rm -f "$tarball"
  log "$folder: done"
}

main() {
  if [[ $# -gt 1 || "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    echo "usage: $0 [DEST]   (default DEST: data/ under the working directory)" >&2
    exit 2
  fi
  local dest=${1:-data}
  local mnist_mirrors fashion_mirrors
  read -r -a mnist_mirrors <<< "${MEMSWEEP_MNIST_MIRRORS:-https://ossci-datasets.s3.amazonaws.com/mnist/ http://yann.lecun.com/exdb/mnist/}"
  read -r -a fashion_mirrors <<< "${MEMSWEEP_FASHION_MNIST_MIRRORS:-http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/}"
  local cifar_url=${MEMSWEEP_CIFAR10_URL:-https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz}
  [[ "$(basename "$cifar_url")" == "$CIFAR10_TARBALL" ]] || die "MEMSWEEP_CIFAR10_URL must end in /$CIFAR10_TARBALL"

  mkdir -p "$dest"
  fetch_idx_dataset "$dest/mnist" MNIST_MD5 "${mnist_mirrors[@]}"
  fetch_idx_dataset "$dest/fashion-mnist" FASHION_MNIST_MD5 "${fashion_mirrors[@]}"
  fetch_cifar10 "$dest/cifar-10" "$cifar_url"
  log "all datasets are in $dest"
}

# Sourcing the script (to test a function) defines the functions only.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
