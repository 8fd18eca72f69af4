#!/usr/bin/env bash
# Builds pocket's bilingual (Chinese/English) pretraining corpus from Debian 12 packages and npm's
# chinese-poetry: installs what is missing, extracts plain text per source into OUT_DIR/raw/<source>/, then
# runs `pocket-train build-corpus` (cleaning, dedupe, split, manifest). See docs/corpus.md.
#
# usage: scripts/build-corpus.sh OUT_DIR
#   POCKET_TRAIN=path/to/pocket-train   (default: the newest build/*/bin/pocket-train)
#   POETRY="quantangshi songci ..."     chinese-poetry collections to include (default below)
#   SEED=1 HELDOUT_FRAC=0.01
# Non-interactive and idempotent: each source directory is rebuilt from scratch on every run; the npm package
# is downloaded only when absent. A package that cannot be installed is skipped with a warning.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
RAW=$OUT/raw
REPO=$(cd "$(dirname "$0")/.." && pwd)
export LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
exec </dev/null

# The collections of chinese-poetry kept by default: 300 Tang poems, the Song ci, the classics and primers.
# Left out by default, to keep classical verse from outweighing the modern Chinese and the English:
# quantangshi (the complete Tang poems, ~16 MB of text; add it with POETRY="... quantangshi"), quansongshi
# (the Song shi, ~57 MB) and yuanqu (3.5 MB of drama lyrics); always left out: the yudingquantangshi edition
# (a second copy of the Tang poems) and rank/strains (search statistics, no text).
POETRY=${POETRY:-"tangshi300 songci shijing chuci lunyu sishuwujing mengxue wudaishici nalanxingde caocaoshiji shuimotangshi youmengying"}
CP_VERSION=2.0.1

warn() { echo "build-corpus: warning: $*" >&2; }
note() { echo "build-corpus: $*" >&2; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# ---- 1. Packages ------------------------------------------------------------------------------------------
# Text extraction: groff (man pages; in groff-base, which man-db depends on) and w3m for HTML. w3m rather than
# html2text: Debian's html2text 1.3.2a turns spaces inside links into underscores, draws rules as wide as
# -width and cuts CJK text in tables, while `w3m -dump` lays out CJK correctly and leaves long lines unwrapped.
DOC_PKGS="manpages manpages-dev manpages-zh debian-reference-en debian-reference-zh-cn debian-handbook debian-faq
  debian-faq-zh-cn maint-guide maint-guide-zh-cn fortunes fortunes-zh bible-kjv"
TOOL_PKGS="opencc w3m groff-base gzip"
# Common packages that ship zh_CN gettext catalogs, installed when fewer than 30 catalogs are present.
MO_PKGS="iso-codes gettext wget gawk make diffutils findutils grep sed tar coreutils apt dpkg bash"

install_missing() {
  local missing=() p
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ $(id -u) -ne 0 ]]; then
    warn "not root; cannot install ${missing[*]}"
    return 0
  fi
  if [[ -z ${APT_UPDATED:-} ]]; then
    note "apt-get update"
    apt-get update -qq || warn "apt-get update failed; trying the cached package lists"
    APT_UPDATED=1
  fi
  local avail=()
  for p in "${missing[@]}"; do
    if apt-cache show "$p" >/dev/null 2>&1; then avail+=("$p"); else warn "package $p is not available; skipping it"; fi
  done
  [[ ${#avail[@]} -eq 0 ]] && return 0
  note "apt-get install ${avail[*]}"
  if ! apt-get install -y -qq --no-install-recommends "${avail[@]}" >/dev/null; then
    for p in "${avail[@]}"; do  # one by one, so one broken package does not block the rest
      apt-get install -y -qq --no-install-recommends "$p" >/dev/null || warn "cannot install $p; skipping it"
    done
  fi
}

# shellcheck disable=SC2086
install_missing $DOC_PKGS $TOOL_PKGS
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then install_missing nodejs npm; fi
n_mo=$(find /usr/share/locale/zh_CN/LC_MESSAGES -name '*.mo' 2>/dev/null | wc -l)
# shellcheck disable=SC2086
if [[ $n_mo -lt 30 ]]; then install_missing $MO_PKGS; fi

# ---- 2. Helpers -------------------------------------------------------------------------------------------
# new_source NAME KIND PKG... : an empty RAW/NAME with meta.json and the packages' copyright files.
new_source() {
  local kind=$2 dir=$RAW/$1 p v first=1
  shift 2
  rm -rf "$dir"
  mkdir -p "$dir/copyright"
  {
    printf '{"kind": "%s", "packages": [' "$kind"
    for p in "$@"; do
      v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || echo unknown)
      [[ $first -eq 1 ]] || printf ', '
      printf '{"name": "%s", "version": "%s"}' "$p" "$v"
      first=0
      [[ -f /usr/share/doc/$p/copyright ]] && cp "/usr/share/doc/$p/copyright" "$dir/copyright/$p"
    done
    printf ']}\n'
  } >"$dir/meta.json"
}

# Files of an installed package matching an extended regex, sorted.
pkg_files() { dpkg -L "$1" 2>/dev/null | grep -E "$2" | LC_ALL=C sort || true; }

# render_man FILE...: each man page as plain text, one paragraph per line (a 4000-column line length, so
# groff does not wrap), pages separated by \f. The running header and footer lines ("LS(1) User Commands
# LS(1)") are cut. Symlinks and pages that only `.so`-include another page are skipped (the target is rendered
# on its own).
render_man() {
  local f head
  for f in "$@"; do
    [[ -f $f && ! -L $f ]] || continue
    head=$(zcat -f "$f" 2>/dev/null | head -c 200 || true)  # (pipefail: a SIGPIPE here is not an error)
    if [[ $head == .so\ * || $head == *$'\n'.so\ * ]]; then continue; fi
    zcat -f "$f" | groff -k -Tutf8 -mandoc -rLL=4000n -rcR=1 -P-cbou 2>/dev/null |
      awk '{ l[NR] = $0; if ($0 ~ /[^ ]/) { if (!first) first = NR; last = NR } }
           END { for (i = first + 1; i < last; i++) print l[i] }' || true
    printf '\f\n'
  done
}

# render_html FILE...: each page as text through w3m, unwrapped, pages separated by \f.
render_html() {
  local f
  for f in "$@"; do
    [[ -f $f ]] || continue
    w3m -dump -T text/html -I UTF-8 -O UTF-8 -cols 4000 -no-graph "$f" 2>/dev/null || true
    printf '\f\n'
  done
}

have() { installed "$1" || { warn "$1 is not installed; skipping its source"; return 1; }; }

mkdir -p "$RAW"
note "extracting text into $RAW"

# ---- 3. Sources -------------------------------------------------------------------------------------------
if have manpages-zh; then
  new_source manpages-zh text manpages-zh
  # shellcheck disable=SC2046
  render_man $(pkg_files manpages-zh '^/usr/share/man/zh_CN/man[^/]*/[^/]+$') >"$RAW/manpages-zh/man.txt"
fi

en_man=()
for p in manpages manpages-dev; do
  if installed "$p"; then en_man+=("$p"); else warn "$p is not installed; skipping it"; fi
done
if [[ ${#en_man[@]} -gt 0 ]]; then
  new_source manpages-en text "${en_man[@]}"
  for p in "${en_man[@]}"; do
    # shellcheck disable=SC2046
    render_man $(pkg_files "$p" '^/usr/share/man/man[^/]*/[^/]+$') >"$RAW/manpages-en/$p.txt"
  done
fi

if have debian-reference-en; then
  new_source debian-reference-en text debian-reference-en
  # shellcheck disable=SC2046
  render_html $(pkg_files debian-reference-en '/usr/share/debian-reference/[^/]*\.en\.html$') >"$RAW/debian-reference-en/ref.txt"
fi
if have debian-reference-zh-cn; then
  new_source debian-reference-zh text debian-reference-zh-cn
  # shellcheck disable=SC2046
  render_html $(pkg_files debian-reference-zh-cn '/usr/share/debian-reference/[^/]*\.zh-cn\.html$') >"$RAW/debian-reference-zh/ref.txt"
fi

if have debian-handbook; then
  new_source debian-handbook-en text debian-handbook
  # shellcheck disable=SC2046
  render_html $(pkg_files debian-handbook '/html/en-US/[^/]*\.html$') >"$RAW/debian-handbook-en/handbook.txt"
  new_source debian-handbook-zh text debian-handbook
  # shellcheck disable=SC2046
  render_html $(pkg_files debian-handbook '/html/zh-CN/[^/]*\.html$') >"$RAW/debian-handbook-zh/handbook.txt"
fi

if have debian-faq; then
  new_source debian-faq-en text debian-faq
  # shellcheck disable=SC2046
  render_html $(pkg_files debian-faq '/FAQ/[^/]*\.en\.html$') >"$RAW/debian-faq-en/faq.txt"
fi
if have debian-faq-zh-cn; then
  new_source debian-faq-zh text debian-faq-zh-cn
  # shellcheck disable=SC2046
  render_html $(pkg_files debian-faq-zh-cn '/FAQ/zh-cn/[^/]*\.zh-cn\.html$') >"$RAW/debian-faq-zh/faq.txt"
fi

if have maint-guide; then
  new_source maint-guide-en text maint-guide
  # shellcheck disable=SC2046
  render_html $(pkg_files maint-guide '/html/[^/]*\.en\.html$') >"$RAW/maint-guide-en/guide.txt"
fi
if have maint-guide-zh-cn; then
  new_source maint-guide-zh text maint-guide-zh-cn
  # shellcheck disable=SC2046
  render_html $(pkg_files maint-guide-zh-cn '/html/[^/]*\.zh-cn\.html$') >"$RAW/maint-guide-zh/guide.txt"
fi

# fortune files: "%" lines separate the fortunes; each fortune becomes a document.
fortune_files() { pkg_files "$1" '^/usr/share/games/fortunes/[^/.]+$'; }
if have fortunes; then
  new_source fortunes-en text fortunes
  for f in $(fortune_files fortunes); do
    [[ -f $f && ! -L $f ]] && sed 's/^%$/\f/' "$f" >"$RAW/fortunes-en/$(basename "$f").txt"
  done
fi
if have fortunes-zh; then
  new_source fortunes-zh text fortunes-zh
  for f in $(fortune_files fortunes-zh); do
    [[ -f $f && ! -L $f ]] && sed 's/^%$/\f/' "$f" >"$RAW/fortunes-zh/$(basename "$f").txt"
  done
fi

# The King James Bible, one document per chapter ("Ge1:1 In the beginning ..." -> heading + verses).
if have bible-kjv && command -v bible >/dev/null; then
  new_source bible-kjv text bible-kjv bible-kjv-text
  bible -f "gen1:1-rev22:21" | awk '
    match($0, /^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ /) {
      ref = substr($0, 1, RLENGTH - 1); text = substr($0, RLENGTH + 1)
      split(ref, rc, ":"); chap = rc[1]
      if (chap != last) { if (last != "") printf "\f\n"; print chap; last = chap }
      print text
    }' >"$RAW/bible-kjv/kjv.txt"
fi

# chinese-poetry (npm, MIT): poems as documents (title, author, lines), converted to Simplified Chinese.
NPM_DIR=$RAW/npm
CP_DIR=$NPM_DIR/node_modules/chinese-poetry
if command -v npm >/dev/null && command -v node >/dev/null; then
  if [[ ! -f $CP_DIR/package.json ]] || ! grep -q "\"version\": \"$CP_VERSION\"" "$CP_DIR/package.json"; then
    note "npm install chinese-poetry@$CP_VERSION into $NPM_DIR"
    mkdir -p "$NPM_DIR"
    npm install --no-audit --no-fund --ignore-scripts --prefix "$NPM_DIR" "chinese-poetry@$CP_VERSION" >/dev/null ||
      warn "npm install chinese-poetry failed; skipping it"
  fi
fi
if [[ -f $CP_DIR/package.json ]] && command -v opencc >/dev/null; then
  rm -rf "$RAW/chinese-poetry"
  mkdir -p "$RAW/chinese-poetry/copyright"
  cp "$CP_DIR/LICENSE" "$RAW/chinese-poetry/copyright/chinese-poetry"
  printf '{"kind": "text", "packages": [{"name": "npm:chinese-poetry", "version": "%s"}], "licence": "MIT"}\n' \
    "$(node -p "require('$CP_DIR/package.json').version")" >"$RAW/chinese-poetry/meta.json"
  TRAD=$NPM_DIR/traditional
  rm -rf "$TRAD" && mkdir -p "$TRAD"
  # One file per collection; the Song shi (quantangshi/poet.song.*) and 300 Tang poems (quantangshi/唐诗三百首)
# are collections of their own.
  node - "$CP_DIR/dist" "$TRAD" "$POETRY" <<'EOF'
const fs = require('fs'), path = require('path');
const [root, out, wanted] = process.argv.slice(2);
const want = new Set(wanted.split(/\s+/).filter(Boolean));
const skip = (f) => /^(authors?\.|author\.song|error|表面结构字)/.test(path.basename(f));
const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
function walk(d, acc) {
  for (const e of fs.readdirSync(d, {withFileTypes: true}).sort(byName)) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p, acc);
    else if (e.name.endsWith('.json') && !skip(p)) acc.push(p);
  }
  return acc;
}
const strs = (a) => Array.isArray(a) && a.length > 0 && a.every((s) => typeof s === 'string');
// An object with a list of lines (paragraphs/content/para) is one poem or passage.
function docs(v, acc) {
  if (Array.isArray(v)) { for (const x of v) docs(x, acc); return; }
  if (v === null || typeof v !== 'object') return;
  let body = ['paragraphs', 'content', 'para'].map((k) => v[k]).find(strs);
  if (!body && typeof v.content === 'string') body = [v.content, ...(strs(v.comment) ? v.comment : [])];
  if (body) {
    const head = [...new Set(['title', 'rhythmic', 'chapter', 'section'].map((k) => v[k])
                                 .filter((s) => typeof s === 'string' && s.trim()))];
    if (typeof v.author === 'string' && v.author.trim()) head.push(v.author);
    acc.push([...head, ...body].join('\n'));
    return;
  }
  for (const k of Object.keys(v)) docs(v[k], acc);
}
const groups = {};
for (const f of walk(root, [])) {
  const rel = path.relative(root, f).split(path.sep).join('/');
  const group = rel.startsWith('quantangshi/poet.song.') ? 'quansongshi'
              : rel === 'quantangshi/唐诗三百首.json' ? 'tangshi300' : rel.split('/')[0];
  if (!want.has(group)) continue;
  const acc = [];
  docs(JSON.parse(fs.readFileSync(f, 'utf8')), acc);
  (groups[group] = groups[group] || []).push(...acc);
}
for (const g of Object.keys(groups).sort()) {
  fs.writeFileSync(path.join(out, g + '.txt'), groups[g].join('\n\f\n') + '\n');
}
EOF
  for f in "$TRAD"/*.txt; do
    opencc -c t2s.json -i "$f" -o "$RAW/chinese-poetry/$(basename "$f")"
  done
else
  warn "chinese-poetry (npm) or opencc is unavailable; skipping the poetry"
fi

# gettext catalogs: msgid (English) / msgstr (Simplified Chinese) pairs, named after their package.
mos=(/usr/share/locale/zh_CN/LC_MESSAGES/*.mo)
if [[ -f ${mos[0]} ]]; then
  pkgs=$(dpkg -S "${mos[@]}" 2>/dev/null | sed 's/:.*//; s/, /\n/g' | sed 's/:.*//' | LC_ALL=C sort -u || true)
  # shellcheck disable=SC2086
  new_source gettext-zh_CN mo $pkgs
  mkdir -p "$RAW/gettext-zh_CN/mo"
  cp "${mos[@]}" "$RAW/gettext-zh_CN/mo/"
else
  warn "no zh_CN gettext catalogs under /usr/share/locale; no parallel pairs"
fi

# ---- 4. The corpus ----------------------------------------------------------------------------------------
PT=${POCKET_TRAIN:-}
if [[ -z $PT ]]; then
  # shellcheck disable=SC2012  # newest by modification time; the paths are ours
  PT=$(ls -t "$REPO"/build/*/bin/pocket-train 2>/dev/null | head -1 || true)
fi
if [[ -z $PT || ! -x $PT ]]; then
  echo "build-corpus: pocket-train not found; build it (ninja -C build/train pocket_train) or set POCKET_TRAIN" >&2
  exit 1
fi
note "running $PT build-corpus"
"$PT" build-corpus --raw "$RAW" --out "$OUT" --heldout-frac "${HELDOUT_FRAC:-0.01}" --seed "${SEED:-1}"
