#!/usr/bin/python3
"""Side-by-side benchmark of pocket and llama.cpp on the same weights, in one run (docs/performance.md).

pocket writes the model (`pocket synth`, q4_g32) and exports the very same weights to GGUF Q4_0 (the same
4.5-bit blocks: `pocket convert X.pocket X.gguf --type q4_0`), so both engines read identical numbers.
llama.cpp is NOT part of this repository: build it yourself outside the tree and pass its bin/ folder.
For each model the two engines alternate (pocket, llama.cpp, pocket, llama.cpp, ...) so that load changes
on a shared machine hit both; medians over all rounds are reported, with the ratio.

Usage: bench/compare_llamacpp.py --pocket build/release/bin/pocket --llama native=/path/llama.cpp/build/bin \
           [--llama avx2=/path/llama.cpp/build-avx2/bin] [--arch pocket-0.3b qwen3-0.6b] [--rounds 3] [--reps 3]
           [--threads 2] [--work DIR] [--json OUT]
Standard library only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def pocket_bench(pocket, model, reps, threads, depth, extra=()):
    out = run([pocket, "bench", "-m", model, "-p", "512", "-n", "128", "-r", str(reps), "-t", str(threads),
               "-d", str(depth), "-o", "json", *extra]).stdout
    return json.loads(out)


def llama_bench_has_depth(bindir):
    """Newer llama-bench builds take -d/--n-depth (tokens already in the context before each test)."""
    p = subprocess.run([os.path.join(bindir, "llama-bench"), "--help"], capture_output=True, text=True)
    return "--n-depth" in p.stdout + p.stderr


def llama_bench(bindir, model, reps, threads, depth=0, extra=()):
    cmd = [os.path.join(bindir, "llama-bench"), "-m", model, "-r", str(reps), "-t", str(threads), "-o", "json",
           *extra]
    if depth:
        cmd += ["-p", "0", "-n", "128", "-d", str(depth)]
    else:
        cmd += ["-p", "512", "-n", "128", "-pg", "512,128"]
    out = run(cmd).stdout
    rows = {}
    for r in json.loads(out):
        p, n = r["n_prompt"], r["n_gen"]
        name = f"pp{p}" if n == 0 else (f"tg{n}" if p == 0 else f"pp{p}+tg{n}")
        if r.get("n_depth", 0):
            name += f"@d{r['n_depth']}"
        rows[name] = r["samples_ts"]
    return rows


def make_prompt(pocket, model, path, target=500):
    """A plain-English prompt of about `target` tokens under the model's own tokenizer (as llama.cpp sees it,
    since the GGUF carries the same vocabulary)."""
    words = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches "
             "in the old town square near the river bank").split()
    n = 50
    while True:
        text = " ".join(words[i % len(words)] for i in range(n))
        out = run([pocket, "tokenize", "--ids", "-m", model, text]).stdout.split()
        if len(out) >= target or n > 5000:
            break
        n = int(n * target / max(1, len(out))) + 1
    with open(path, "w") as f:
        f.write(text)
    return len(out)


def llama_depth(bindir, model, threads, prompt):
    """tg128 after a ~512-token prompt, for llama-bench builds without -d: the eval timings of llama-cli (or
    llama-completion, its later name for plain completion), and its peak RSS from /usr/bin/time -v (the whole
    process; llama.cpp has no pre-load baseline to subtract). Newer builds use it for the peak RSS only."""
    exe = os.path.join(bindir, "llama-completion")
    if not os.path.exists(exe):
        exe = os.path.join(bindir, "llama-cli")
    cmd = ["/usr/bin/time", "-v", exe, "-m", model, "-f", prompt, "-n", "128",
           "-t", str(threads), "-c", "1024", "--ignore-eos", "-no-cnv", "--temp", "0", "-s", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    log = p.stdout + p.stderr
    pe = re.search(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens", log)
    ev = re.search(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs", log)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", log)
    if not (pe and ev):
        raise RuntimeError("llama-cli output not understood:\n" + log[-2000:])
    return {"prompt_tokens": int(pe.group(2)), "tg_tps": 1000.0 * int(ev.group(2)) / float(ev.group(1)),
            "peak_rss_mib": int(rss.group(1)) / 1024.0 if rss else None}


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pocket", required=True)
    ap.add_argument("--llama", required=True, action="append",
                    help="LABEL=DIR: a llama.cpp build/bin folder (built outside this repo); repeat for several builds")
    ap.add_argument("--arch", nargs="+", default=["pocket-0.3b"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--pocket-arg", action="append", default=[],
                    help="extra argument for `pocket bench` (repeat), e.g. --pocket-arg=--no-mmap")
    ap.add_argument("--llama-bench-arg", action="append", default=[],
                    help="extra argument for llama-bench (repeat), e.g. --llama-bench-arg=-mmp --llama-bench-arg=0")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="pocket-vs-llama-")
    os.makedirs(work, exist_ok=True)
    report = {"threads": a.threads, "rounds": a.rounds, "reps": a.reps, "models": {}}
    for arch in a.arch:
        pk = os.path.join(work, f"{arch}.q4_g32.pocket")
        gg = os.path.join(work, f"{arch}.q4_0.gguf")
        if not os.path.exists(pk):
            run([a.pocket, "synth", "--arch", arch, "--type", "q4_g32", "-o", pk])
        if not os.path.exists(gg):
            run([a.pocket, "convert", pk, gg, "--type", "q4_0"])
        prompt = os.path.join(work, f"{arch}.prompt.txt")
        if not os.path.exists(prompt):
            make_prompt(a.pocket, pk, prompt)
        P = {"pp512": [], "tg128": [], "pp512+tg128": [], "tg128@d512": [], "rss": [], "bw": [], "roof": []}
        builds = [x.split("=", 1) if "=" in x else ("llama.cpp", x) for x in a.llama]
        L = {lab: {"pp512": [], "tg128": [], "pp512+tg128": [], "tg128@d512": [], "rss": []} for lab, _ in builds}
        errors = {lab: None for lab, _ in builds}
        has_depth = {lab: llama_bench_has_depth(bindir) for lab, bindir in builds}
        for rnd in range(a.rounds):
            j = pocket_bench(a.pocket, pk, a.reps, a.threads, 512, a.pocket_arg)
            for row in j["rows"]:
                key = row["test"].replace(" @ d", "@d")
                if key in P:
                    P[key] += row["samples"]
            P["rss"].append(j["peak_rss_increase_bytes"] / 2**20)
            P["bw"].append(j["bandwidth_gb_s"])
            P["roof"].append(j["decode_roofline_tps"])
            for lab, bindir in builds:
                if errors[lab] is not None:
                    continue
                try:
                    for k, v in llama_bench(bindir, gg, a.reps, a.threads, 0, a.llama_bench_arg).items():
                        L[lab][k] += v
                    if has_depth[lab]:
                        L[lab]["tg128@d512"] += llama_bench(bindir, gg, a.reps, a.threads, 512,
                                                            a.llama_bench_arg)["tg128@d512"]
                    d = llama_depth(bindir, gg, a.threads, prompt)
                    if not has_depth[lab]:
                        L[lab]["tg128@d512"].append(d["tg_tps"])
                    if d["peak_rss_mib"]:
                        L[lab]["rss"].append(d["peak_rss_mib"])
                except (subprocess.CalledProcessError, RuntimeError) as e:
                    errors[lab] = (getattr(e, "stderr", None) or str(e))[-600:]
            print(f"[{arch}] round {rnd + 1}/{a.rounds} done", file=sys.stderr)
        m = {"pocket": {k: median(v) for k, v in P.items()},
             "llama": {lab: {k: median(v) for k, v in L[lab].items()} for lab, _ in builds},
             "pocket_bytes": os.path.getsize(pk), "gguf_bytes": os.path.getsize(gg), "llama_errors": errors}
        report["models"][arch] = m
        print(f"\n### {arch}: pocket q4_g32 ({m['pocket_bytes']:,} B) vs llama.cpp Q4_0 ({m['gguf_bytes']:,} B), "
              f"{a.threads} threads, medians of {a.rounds} alternating rounds x {a.reps} runs"
              f"{'; pocket bench ' + ' '.join(a.pocket_arg) if a.pocket_arg else ''}"
              f"{'; llama-bench ' + ' '.join(a.llama_bench_arg) if a.llama_bench_arg else ''}\n")
        for lab, err in errors.items():
            if err:
                last = err.strip().splitlines()[-1] if err.strip() else "?"
                print(f"llama.cpp ({lab}) failed on this model: {last}\n")
        labs = [lab for lab, _ in builds]
        print("| test | pocket t/s | " + " | ".join(f"llama.cpp {l} t/s | pocket / {l}" for l in labs) + " |")
        print("| --- | ---: |" + " ---: | ---: |" * len(labs))
        for k in ["pp512", "tg128", "pp512+tg128", "tg128@d512"]:
            pv = m["pocket"][k]
            cells = []
            for l in labs:
                lv = m["llama"][l].get(k, float("nan"))
                ratio = pv / lv if lv == lv and lv > 0 else float("nan")
                cells.append(f"{lv:.1f} | {ratio:.2f}x")
            print(f"| {k} | {pv:.1f} | " + " | ".join(cells) + " |")
        roof = m["pocket"]["roof"]
        print(f"\npocket decode roofline (probe {m['pocket']['bw']:.1f} GB/s over the package's bytes per token): "
              f"{roof:.1f} tok/s; tg128 at {100 * m['pocket']['tg128'] / roof:.0f} % of it.")
        print(f"peak memory: pocket +{m['pocket']['rss']:.1f} MiB over its pre-load baseline (pp512+tg128); " +
              "; ".join(f"llama-cli ({l}) {m['llama'][l].get('rss', float('nan')):.1f} MiB whole-process RSS" for l in labs) +
              " (512+128 tokens, mmap).")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
