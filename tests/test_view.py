"""``lattice-tools view``: the page is self-contained and every number it shows is the toolkit's.

The browser tests drive Debian's chromium (``/usr/bin/chromium``) with playwright, headless; they are
skipped with the reason when either is missing (playwright never downloads a browser here).  Each page is
opened from ``file://`` with every request recorded, and the numbers in its ``data-`` attributes are compared
with the JSON of ``lattice-tools score``, ``lattice-tools oracle`` and the kwslist of ``lattice-tools kws
search`` run as command lines on the same inputs (two real pocketsphinx lattices, tests/data/inputs).
"""
from __future__ import annotations

import io
import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "inputs"
CHROMIUM = "/usr/bin/chromium"
REPS = ("nbest", "sausage", "phrase")   # on the page made with a GLM (a GLM is refused with the lattice oracle)

# the 1-best of 003.lat is "seven of clubs", of 004.lat "five five"
STM = ("003 1 spk003 0.0 10.0 seven and clubs\n"
       "004 1 spk004 0.0 10.0 five nine\n")
GLM = ("* name \"view-test\"\n* desc \"an alternation for the view's test\"\n* format = 'NIST1'\n"
       "* max_nrules = '10'\n* copy_no_hit = 'T'\n* case_sensitive = 'F'\n"
       "SEVEN => {SEVEN / 7} / [ ] __ [ ]\n")


def _run(*args) -> str:
    """A lattice-tools command line, run in this process; its standard output."""
    from click.testing import CliRunner

    from lattice_tools.cli import main

    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The inputs, the page and the peers' JSON for the same inputs."""
    d = tmp_path_factory.mktemp("view")
    lats = [DATA / "003.lat", DATA / "004.lat"]
    (d / "ref.stm").write_text(STM)
    (d / "map.glm").write_text(GLM)
    from lattice_tools.io.keyword_search.kwlist import KeywordTerm, write_kwlist

    write_kwlist(str(d / "kwlist.xml"), [KeywordTerm("KW-1", "seven"), KeywordTerm("KW-2", "clubs"),
                                          KeywordTerm("KW-3", "five")])
    _run("kws", "index", *lats, "-o", d / "index.sqlite")
    _run("kws", "search", d / "index.sqlite", "--kwlist", d / "kwlist.xml", "-o", d / "hits.xml")
    summary = json.loads(_run("view", *lats, "-r", d / "ref.stm", "--glm", d / "map.glm", "--kwslist", d / "hits.xml",
                              "--kwlist", d / "kwlist.xml", "--representations", ",".join(REPS), "-o", d / "view.html",
                              "--json", "-"))
    # the whole-lattice oracle takes no GLM (as `oracle`): its own page, without one
    lattice_summary = json.loads(_run("view", *lats, "-r", d / "ref.stm", "--representations", "lattice",
                                      "-o", d / "view_lattice.html", "--json", "-"))
    # the 1-best as a CTM (the best path of each lattice), scored by `score` with the same GLM
    from lattice_tools.io import read_lattice_inputs
    from lattice_tools.io.transcripts.altctm import write_alternatives_ctm
    from lattice_tools.oracle.representations import one_best

    write_alternatives_ctm(str(d / "1best.ctm"), [one_best(lat) for lat in read_lattice_inputs([str(x) for x in lats])],
                           n=1)
    score = json.loads(_run("score", "-r", d / "ref.stm", "-h", d / "1best.ctm", "--glm", d / "map.glm", "--json", "-"))
    oracle = {rep: json.loads(_run("oracle", *lats, "-r", d / "ref.stm", "--glm", d / "map.glm", "--representation",
                                   rep, "-n", "10", "--json", "-"))
              for rep in ("1best", *REPS)}
    oracle["lattice"] = json.loads(_run("oracle", *lats, "-r", d / "ref.stm", "--representation", "lattice",
                                        "--json", "-"))
    for rep in ("nbest", "sausage", "phrases"):
        _run(rep, *lats, "-n", "10", "-o", d / f"{rep}.ctm")
    return {"dir": d, "page": d / "view.html", "summary": summary, "score": score, "oracle": oracle,
            "lattice_summary": lattice_summary}


def _alt_ctm_slots(path) -> dict:
    """{file: [[(words, posterior), ...] per slot]} of an alt-CTM, read line by line (the posterior of an
    alternative is its words' confidence; '@' alternatives have none and are left out)."""
    out: dict = {}
    block = None
    for line in Path(path).read_text().splitlines():
        f = line.split()
        if not f:
            continue
        slots = out.setdefault(f[0], [])
        if f[4] == "<ALT_BEGIN>":
            block = [[]]
        elif f[4] == "<ALT>":
            block.append([])
        elif f[4] == "<ALT_END>":
            slots.append([(" ".join(w for w, _ in alt), alt[0][1]) for alt in block if alt and alt[0][0] != "@"])
            block = None
        elif block is not None:
            block[-1].append((f[4], float(f[5]) if len(f) > 5 else None))
        else:
            slots.append([(f[4], float(f[5]))])
    return out


def test_the_page_is_one_self_contained_file(made):
    html = made["page"].read_text(encoding="utf-8")
    # no address of any kind but the SVG namespace (a name, never fetched); no external element at all
    for needle in ("https:", "//cdn", "<link", " src=", "@import", "url(", "fetch(", "XMLHttpRequest", "WebSocket"):
        assert needle not in html, needle
    assert html.count("http:") == html.count("http://www.w3.org/2000/svg")
    assert "default-src 'none'" in html  # the page forbids itself any request
    assert made["summary"]["bytes"] == made["page"].stat().st_size


def test_data_cannot_end_its_script_element():
    from lattice_tools.viewer.page import data_json, render_page

    text = data_json({"w": ["</s>", "<!--", "</script>"]})
    assert "</" not in text and "<!--" not in text
    assert json.loads(text) == {"w": ["</s>", "<!--", "</script>"]}
    page = render_page({"title": "<b>&", "utterances": [], "totals": {}, "representations": [], "settings": {}})
    assert "<title>&lt;b&gt;&amp;</title>" in page


def test_summary_totals_are_the_scorers(made):
    """Without a browser: the totals the page is given equal score's and oracle's JSON."""
    totals = made["summary"]["totals"]
    o = made["score"]["overall"]
    assert totals["1best"] == {"C": o["correct"], "S": o["substitutions"], "D": o["deletions"], "I": o["insertions"],
                               "N": o["ref_words"], "E": o["errors"], "wer": o["wer"]}
    for rep in REPS:
        c = made["oracle"][rep]["counts"]
        assert totals[rep]["E"] == c["errors"] and totals[rep]["N"] == c["ref_words"], rep
        assert totals[rep]["wer"] == pytest.approx(made["oracle"][rep]["wer"]), rep
    lattice = made["lattice_summary"]["totals"]
    c = made["oracle"]["lattice"]["counts"]
    assert lattice["lattice"]["E"] == c["errors"] and lattice["lattice"]["N"] == c["ref_words"]
    assert lattice["1best"]["E"] > lattice["lattice"]["E"]  # the fixture has something to recover


def test_errors_are_one_line_and_leave_no_output(tmp_path):
    from click.testing import CliRunner

    from lattice_tools.cli import main

    (tmp_path / "ref.stm").write_text("other 1 s 0.0 1.0 x\n")
    out = tmp_path / "v.html"
    res = CliRunner().invoke(main, ["view", str(DATA / "003.lat"), "-r", str(tmp_path / "ref.stm"), "-o", str(out)])
    assert res.exit_code == 2 and "003" in res.output and "Traceback" not in res.output
    assert not out.exists() and os.listdir(tmp_path) == ["ref.stm"]
    res = CliRunner().invoke(main, ["view", "-o", str(out)])
    assert res.exit_code == 2 and "nothing to show" in res.output
    res = CliRunner().invoke(main, ["view", str(DATA / "003.lat"), "--representations", "nbest,bogus", "-o", str(out)])
    assert res.exit_code == 2 and "bogus" in res.output
    # a Kaldi lattice without alignment has no word times: refused for phrases, drawn without a time axis
    # when accepted
    untimed = ["view", str(DATA / "insertion_noali.ark"), "--words", str(DATA / "tiny.words.txt"), "-o", str(out)]
    res = CliRunner().invoke(main, untimed)
    assert res.exit_code == 2 and "--allow-untimed" in res.output and not out.exists()
    res = CliRunner().invoke(main, [*untimed, "--allow-untimed"])
    assert res.exit_code == 0, res.output
    html = out.read_text(encoding="utf-8")
    data = json.loads(html.split('id="view-data">', 1)[1].split("</script>", 1)[0])
    assert data["utterances"][0]["lat"] is None  # the page then says it has no word times


def test_without_reference_the_page_still_shows_alternatives_and_lattice(tmp_path):
    from lattice_tools import view

    s = view([str(DATA / "004.lat")], str(tmp_path / "v.html"), representations=("sausage",), max_arcs=50)
    assert s.utterances == 1 and s.totals == {} and s.to_dict()["totals"] == {}
    html = (tmp_path / "v.html").read_text(encoding="utf-8")
    data = json.loads(html.split('id="view-data">', 1)[1].split("</script>", 1)[0])
    u = data["utterances"][0]
    assert len(u["lat"]["w"]) <= 50 + len(u["lat"]["best"]) and u["reps"]["sausage"]["slots"]
    kept = u["lat"]["q"][:50]  # the most probable first (best-path arcs beyond them follow)
    assert kept == sorted(kept, reverse=True) and u["lat"]["n_word_arcs"] > 50


# ----------------------------------------------------------------------------------------------
# In the browser
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no chromium at {CHROMIUM} (Debian package 'chromium')")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)  # never a downloaded browser
        yield b
        b.close()


@pytest.fixture
def page(browser, made):
    ctx = browser.new_context(viewport={"width": 1400, "height": 950})
    pg = ctx.new_page()
    requests, errors = [], []
    url = made["page"].resolve().as_uri()

    def route(r):
        requests.append(r.request.url)
        if r.request.url == url:
            r.continue_()
        else:
            r.abort()

    pg.route("**/*", route)
    pg.on("request", lambda r: requests.append(r.url))
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.goto(url)
    pg.wait_for_selector("body[data-ready='1']")
    yield pg
    assert set(requests) == {url}, f"requests left the page: {set(requests) - {url}}"
    assert not errors, errors
    ctx.close()


def _counts_of(el) -> dict:
    a = el.evaluate("e => Object.assign({}, e.dataset)")
    return {"C": int(a["c"]), "S": int(a["s"]), "D": int(a["d"]), "I": int(a["i"]), "N": int(a["n"]), "E": int(a["e"])}


def _select(page, key: str) -> None:
    page.click(f".row[data-key='{key}']")
    page.wait_for_selector(f"#detail h2[data-key='{key}']")


def test_every_count_on_the_page_is_scores_and_oracles(page, made):
    score, oracle = made["score"], made["oracle"]
    # totals table
    o = score["overall"]
    row = page.query_selector("tr.total[data-rep='1best']")
    assert _counts_of_cells(row) == (o["correct"], o["substitutions"], o["deletions"], o["insertions"],
                                     o["ref_words"], o["errors"])
    assert float(row.query_selector("td[data-wer]").get_attribute("data-wer")) == pytest.approx(o["wer"])
    for rep in REPS:
        c = oracle[rep]["counts"]
        row = page.query_selector(f"tr.total[data-rep='{rep}']")
        assert _counts_of_cells(row) == (c["correct"], c["substitutions"], c["deletions"], c["insertions"],
                                         c["ref_words"], c["errors"]), rep
    # per utterance: the 1-best against score's per-speaker counts (one speaker per recording), the
    # oracles against oracle's per-utterance counts
    for key in ("003", "004"):
        _select(page, key)
        sp = score["speakers"][f"spk{key}"]
        got = _counts_of(page.query_selector("#detail p.summary[data-rep='1best']"))
        assert got == {"C": sp["correct"], "S": sp["substitutions"], "D": sp["deletions"], "I": sp["insertions"],
                       "N": sp["ref_words"], "E": sp["errors"]}, key
        wer = page.get_attribute("#detail p.summary[data-rep='1best']", "data-wer")
        assert float(wer) == pytest.approx(sp["wer"])
        assert page.get_attribute(f".row[data-key='{key}']", "data-wer") == wer
        ops = page.eval_on_selector_all("#detail .pair", "ps => ps.map(p => p.dataset.op)")
        assert ops.count("S") == sp["substitutions"] and ops.count("C") == sp["correct"]
        assert ops.count("D") == sp["deletions"] and ops.count("I") == sp["insertions"]
        for rep in REPS:
            ref = next(u for u in oracle[rep]["utterances"] if u["key"] == key)
            got = _counts_of(page.query_selector(f"#detail p.summary[data-rep='{rep}']"))
            assert got == {"C": ref["correct"], "S": ref["substitutions"], "D": ref["deletions"],
                           "I": ref["insertions"], "N": ref["ref_words"], "E": ref["errors"]}, (key, rep)
            wer = page.get_attribute(f"#detail p.summary[data-rep='{rep}']", "data-wer")
            assert float(wer) == pytest.approx(ref["errors"] / ref["ref_words"]), (key, rep)
        fewest = min(next(u for u in oracle[rep]["utterances"] if u["key"] == key)["errors"] for rep in REPS)
        assert int(page.get_attribute(f".row[data-key='{key}']", "data-gain")) == sp["errors"] - fewest
        one = next(u for u in oracle["1best"]["utterances"] if u["key"] == key)
        assert got_errors(page, "1best") == one["errors"]


def _counts_of_cells(row):
    return tuple(int(row.query_selector(f"td[data-{k}]").get_attribute(f"data-{k}")) for k in "csdine")


def got_errors(page, rep):
    return int(page.query_selector(f"#detail p.summary[data-rep='{rep}']").get_attribute("data-e"))


def test_oracle_choice_recovered_words_and_glm_alternation(page):
    _select(page, "003")
    # the reference after the GLM shows its alternation; the N-best oracle takes "seven and clubs" (the
    # alternatives are shown as the GLM filtered them, as csrfilt writes them: upper case)
    assert page.query_selector("#detail .alt-ref .alt") is not None
    chosen = page.eval_on_selector_all("#detail section[data-kind='nbest'] .alt-row[data-oracle]",
                                       "rs => rs.map(r => r.dataset.words)")
    assert [c.casefold() for c in chosen] == ["seven and clubs"]
    rec = page.eval_on_selector_all("#detail section[data-kind='nbest'] mark.rec", "ms => ms.map(m => m.textContent)")
    assert [r.casefold() for r in rec] == ["✓and"]  # "of" was the 1-best's substitution for "and"
    # posteriors shown are the alternatives' (N-best posteriors of one slot sum to at most 1)
    ps = [float(x) for x in page.eval_on_selector_all("#detail section[data-kind='nbest'] .alt-row",
                                                        "rs => rs.map(r => r.dataset.p)")]
    assert ps == sorted(ps, reverse=True) and 0 < sum(ps) <= 1 + 1e-6


def test_lattice_arcs_top_k_and_hover(page, made):
    from lattice_tools.algorithms import arc_posteriors
    from lattice_tools.io import read_lattices

    _select(page, "003")
    lat = next(iter(read_lattices(str(DATA / "003.lat"))))
    post = arc_posteriors(lat)
    arcs = page.eval_on_selector_all("#detail rect.arc", "rs => rs.map(r => Object.assign({}, r.dataset))")
    k = int(page.query_selector("#detail svg").get_attribute("data-k"))
    assert k == min(300, len(arcs)) and len(arcs) >= k
    # every arc drawn is a lattice arc with that word, times and posterior (rounded to 4 digits)
    fs = lat.frame_shift
    table = {}
    for i in range(lat.num_arcs):
        table.setdefault((lat.symbols.word(int(lat.word[i])), round(lat.t0[i] * fs, 3), round(lat.t1[i] * fs, 3)),
                         []).append(round(float(post[i]), 4))
    for a in arcs:
        assert float(a["p"]) in table[(a["word"], float(a["t0"]), float(a["t1"]))]
    # the K control redraws: 5 arcs, plus best-path arcs beyond them
    page.fill("#knum", "5")
    page.dispatch_event("#knum", "change")
    best = page.eval_on_selector_all("#detail rect.arc.best", "rs => rs.length")
    n = page.eval_on_selector_all("#detail rect.arc", "rs => rs.length")
    assert 5 <= n <= 5 + best and page.query_selector("#detail svg").get_attribute("data-k") == "5"
    # the 5 most probable drawn are the lattice's 5 most probable word arcs
    from lattice_tools.oracle.graphs import is_nonword

    drawn = sorted((float(x) for x in page.eval_on_selector_all("#detail rect.arc", "rs => rs.map(r => r.dataset.p)")),
                   reverse=True)
    words = sorted((round(float(post[i]), 4) for i in range(lat.num_arcs)
                    if lat.word[i] != 0 and not is_nonword(lat.symbols.word(int(lat.word[i])))), reverse=True)
    assert drawn[:5] == words[:5]
    # hover shows word, times, posterior and costs
    first = page.query_selector("#detail rect.arc")
    first.hover()
    tip = page.inner_text("#tip")
    d = first.evaluate("e => Object.assign({}, e.dataset)")
    assert d["word"] in tip and f"{float(d['p']):.4f}" in tip and f"{float(d['ac']):.2f}" in tip
    # keyboard: focus the drawing, arrow keys read arcs
    page.focus("#latwrap")
    page.keyboard.press("ArrowRight")
    assert not page.query_selector("#tip").is_hidden() and "posterior" in page.inner_text("#tip")


def test_keyword_hits_are_kws_search_scores(page, made):
    root = ET.parse(made["dir"] / "hits.xml").getroot()
    expected = {}
    for lst in root:
        for kw in lst:
            expected.setdefault(kw.get("file"), []).append((lst.get("kwid"), float(kw.get("tbeg")),
                                                            float(kw.get("score")), kw.get("decision") == "YES"))
    assert expected
    for key, hits in expected.items():
        _select(page, key)
        rows = page.eval_on_selector_all("#detail tr.hitrow", "rs => rs.map(r => Object.assign({}, r.dataset))")
        got = sorted((r["kwid"], float(r["tbeg"]), float(r["score"]), r["yes"] == "1") for r in rows)
        assert got == sorted(hits)
        marks = page.eval_on_selector_all("#detail svg path.hit", "ps => ps.map(p => parseFloat(p.dataset.score))")
        assert sorted(marks) == sorted(h[2] for h in hits)
    # the keyword filter keeps the utterances with that keyword's hits
    page.select_option("#keyword", "KW-3")
    keys = page.eval_on_selector_all("#list .row", "rs => rs.map(r => r.dataset.key)")
    assert keys == sorted(k for k, hs in expected.items() if any(h[0] == "KW-3" for h in hs))


def test_filter_sort_and_keyboard(page):
    page.fill("#filter", "nine")  # a reference word of 004 only
    assert page.eval_on_selector_all("#list .row", "rs => rs.map(r => r.dataset.key)") == ["004"]
    page.fill("#filter", "")
    page.select_option("#sort", "wer")
    wers = page.eval_on_selector_all("#list .row", "rs => rs.map(r => parseFloat(r.dataset.wer))")
    assert wers == sorted(wers, reverse=True) and len(wers) == 2
    page.focus("#list")
    page.keyboard.press("Home")
    first = page.get_attribute("#detail", "data-key")
    page.keyboard.press("ArrowDown")
    second = page.get_attribute("#detail", "data-key")
    assert {first, second} == {"003", "004"}
    assert page.get_attribute(f".row[data-key='{second}']", "aria-selected") == "true"


def _not_blank(png: bytes) -> float:
    from PIL import Image, ImageStat

    img = Image.open(io.BytesIO(png)).convert("L")
    return ImageStat.Stat(img).stddev[0]


def test_screenshots_light_dark_and_print(page, made):
    light = page.screenshot(full_page=True)
    assert _not_blank(light) > 20
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.click("#theme")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != bg
    dark = page.screenshot(full_page=True)
    assert _not_blank(dark) > 20 and dark != light
    out = made["dir"] / "shots"
    out.mkdir(exist_ok=True)
    (out / "light.png").write_bytes(light)
    (out / "dark.png").write_bytes(dark)
    page.emulate_media(media="print")
    assert page.evaluate("getComputedStyle(document.getElementById('listpane')).display") == "none"
    assert page.evaluate("getComputedStyle(document.getElementById('detail')).display") != "none"
    assert len(page.pdf()) > 1000  # headless chromium prints it


def test_trn_reference_counts_are_scores_and_oracles(tmp_path):
    """A trn reference (ids with a speaker part, as sclite's spu_id needs): per-utterance counts equal
    `score`'s per-speaker counts and `oracle`'s per-utterance counts."""
    for name in ("003", "004"):
        shutil.copy(DATA / f"{name}.lat", tmp_path / f"s{name}-{name}.lat")
    lats = [tmp_path / "s003-003.lat", tmp_path / "s004-004.lat"]
    (tmp_path / "ref.trn").write_text("seven and clubs (s003-003)\nfive nine (s004-004)\n")
    from lattice_tools import view
    from lattice_tools.io import read_lattice_inputs
    from lattice_tools.io.transcripts.trn import TrnUtterance, write_trn
    from lattice_tools.oracle.representations import one_best

    s = view([str(x) for x in lats], str(tmp_path / "v.html"), reference=str(tmp_path / "ref.trn"),
             representations=("sausage", "lattice"))
    write_trn(str(tmp_path / "1best.trn"), [TrnUtterance(lat.key, " ".join(one_best(lat).one_best()))
                                            for lat in read_lattice_inputs([str(x) for x in lats])])
    score = json.loads(_run("score", "-r", tmp_path / "ref.trn", "-h", tmp_path / "1best.trn", "--json", "-"))
    html = (tmp_path / "v.html").read_text(encoding="utf-8")
    data = json.loads(html.split('id="view-data">', 1)[1].split("</script>", 1)[0])
    for u in data["utterances"]:
        sp = score["speakers"][u["key"].split("-")[0]]
        assert u["onebest"]["counts"]["E"] == sp["errors"] and u["onebest"]["counts"]["N"] == sp["ref_words"]
        assert [p[0] for p in u["onebest"]["align"]].count("S") == sp["substitutions"]
    for rep in ("sausage", "lattice"):
        extra = ["-n", "10"] if rep == "sausage" else []
        o = json.loads(_run("oracle", *lats, "-r", tmp_path / "ref.trn", "--representation", rep, *extra,
                            "--json", "-"))
        assert s.totals[rep].errors == o["counts"]["errors"]
        by_key = {u["key"]: u for u in o["utterances"]}
        for u in data["utterances"]:
            assert u["reps"][rep]["counts"]["E"] == by_key[u["key"]]["errors"], (rep, u["key"])


def test_alt_ctm_inputs_are_shown_with_their_oracles(tmp_path):
    """An alt-CTM from `lattice-tools sausage`, without lattices: its oracle counts are `oracle`'s on the same
    file (one STM segment per recording, so oracle's per-segment and the view's per-recording agree)."""
    (tmp_path / "ref.stm").write_text(STM)
    lats = [DATA / "003.lat", DATA / "004.lat"]
    _run("sausage", *lats, "-n", "5", "-o", tmp_path / "sausage.ctm")
    from lattice_tools import view

    s = view((), str(tmp_path / "v.html"), alt_ctm=[str(tmp_path / "sausage.ctm")], reference=str(tmp_path / "ref.stm"))
    o = json.loads(_run("oracle", tmp_path / "sausage.ctm", "-r", tmp_path / "ref.stm", "--json", "-"))
    assert s.totals["sausage.ctm"].errors == o["counts"]["errors"]
    assert s.totals["sausage.ctm"].ref_words == o["counts"]["ref_words"]
    # the 1-best of an alt-CTM is its first alternatives: scored as `score` scores that CTM
    _run("sausage", *lats, "-n", "1", "-o", tmp_path / "first.ctm")
    sc = json.loads(_run("score", "-r", tmp_path / "ref.stm", "-h", tmp_path / "first.ctm", "--json", "-"))
    assert s.totals["1best"].errors == sc["overall"]["errors"]


def test_study_links_its_view(tmp_path):
    d = tmp_path / "lats"
    d.mkdir()
    for name in ("003", "004"):
        shutil.copy(DATA / f"{name}.lat", d / f"{name}.lat")
    (tmp_path / "ref.stm").write_text(STM)
    _run("study", f"ps={d}", "-r", tmp_path / "ref.stm", "-o", tmp_path / "st", "-n", "1,2",
         "--representations", "sausage,lattice", "--bootstrap", "0", "--no-plots")
    md = (tmp_path / "st" / "study.md").read_text(encoding="utf-8")
    assert md.count("[view.html](view.html)") == 1 and (tmp_path / "st" / "view.html").stat().st_size > 1000
    from lattice_tools.viewer.build import link_view

    link_view(str(tmp_path / "st" / "study.md"), str(tmp_path / "view2.html"), "again")  # a rerun replaces the link
    md2 = (tmp_path / "st" / "study.md").read_text(encoding="utf-8")
    assert "[view.html](view.html)" not in md2 and md2.count("[../view2.html](../view2.html)") == 1
    assert md2.replace(md2.split("\n")[2], "") == md.replace(md.split("\n")[2], "")  # nothing else changed


def test_alternatives_and_posteriors_are_the_alt_ctm_commands(page, made):
    """Every slot, alternative and posterior the page lists is what `nbest`, `sausage` and `phrases` write."""
    for rep, file in (("nbest", "nbest.ctm"), ("sausage", "sausage.ctm"), ("phrase", "phrases.ctm")):
        expected = _alt_ctm_slots(made["dir"] / file)
        for key in ("003", "004"):
            _select(page, key)
            slots = page.eval_on_selector_all(
                f"#detail section[data-kind='{rep}'] .slot",
                "ss => ss.map(s => [...s.querySelectorAll('.alt-row')].map(r => [r.dataset.words, r.dataset.p]))")
            got = [[(w, float(p)) for w, p in slot if w != "@"] for slot in slots]
            assert len(got) == len(expected[key]), (rep, key)
            for g, e in zip(got, expected[key], strict=True):
                assert [w for w, _ in g] == [w for w, _ in e], (rep, key)
                assert [p for _, p in g] == pytest.approx([p for _, p in e], abs=1e-4), (rep, key)


def test_searching_an_index_gives_kws_search_hits(made, tmp_path):
    """--index with --kwlist: the page's hits are those `kws search` writes at its defaults."""
    from lattice_tools import view

    d = made["dir"]
    view([str(DATA / "003.lat"), str(DATA / "004.lat")], str(tmp_path / "v.html"), representations=(),
         index=str(d / "index.sqlite"), kwlist=str(d / "kwlist.xml"))
    html = (tmp_path / "v.html").read_text(encoding="utf-8")
    data = json.loads(html.split('id="view-data">', 1)[1].split("</script>", 1)[0])
    got = sorted((u["key"], h["kwid"], h["tbeg"], h["score"], h["yes"]) for u in data["utterances"] for h in u["hits"])
    root = ET.parse(d / "hits.xml").getroot()
    expected = sorted((kw.get("file"), lst.get("kwid"), float(kw.get("tbeg")), float(kw.get("score")),
                       kw.get("decision") == "YES") for lst in root for kw in lst)
    assert got == expected and got


def test_long_lists_are_virtualised(browser, tmp_path):
    """150 utterances (the two lattices under 75 names each): the list holds only the rows in view, End
    reaches the last utterance and scrolling draws the rows there."""
    from lattice_tools import view

    d = tmp_path / "lats"
    d.mkdir()
    for i in range(75):
        for name in ("003", "004"):
            shutil.copy(DATA / f"{name}.lat", d / f"u{i:03d}-{name}.lat")
    view([str(d)], str(tmp_path / "v.html"), representations=("sausage",), max_arcs=100)
    pg = browser.new_page(viewport={"width": 1200, "height": 800})
    pg.goto((tmp_path / "v.html").resolve().as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    assert pg.inner_text("#count") == "150 of 150 utterances"
    assert pg.eval_on_selector_all("#list .row", "rs => rs.length") < 60
    pg.focus("#list")
    pg.keyboard.press("End")
    assert pg.get_attribute("#detail", "data-key") == "u074-004"
    assert pg.eval_on_selector_all("#list .row", "rs => rs.length") < 60
    assert pg.get_attribute(".row[data-key='u074-004']", "aria-selected") == "true"
    pg.keyboard.press("Home")
    assert pg.get_attribute("#detail", "data-key") == "u000-003"
    pg.close()


def test_no_temporary_is_left(tmp_path, monkeypatch):
    """The 1-best's scratch hypothesis file is removed after scoring, also when scoring fails."""
    import tempfile

    from lattice_tools import view
    from lattice_tools.core.errors import LatticeToolsError

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    (tmp_path / "ref.stm").write_text(STM)
    view([str(DATA / "003.lat")], str(tmp_path / "v.html"), reference=str(tmp_path / "ref.stm"), representations=())
    assert os.listdir(scratch) == []
    # the scorer fails once the scratch file is written: it is removed all the same, and no page is written
    import lattice_tools.scoring

    def failing_scorer(ref, hyp, **options):
        assert os.path.exists(hyp) and os.path.dirname(hyp) == str(scratch)
        raise LatticeToolsError("the scorer failed")

    monkeypatch.setattr(lattice_tools.scoring, "score_files", failing_scorer)
    (tmp_path / "ref.trn").write_text("seven of clubs (003)\n")
    with pytest.raises(LatticeToolsError, match="the scorer failed"):
        view([str(DATA / "003.lat")], str(tmp_path / "w.html"), reference=str(tmp_path / "ref.trn"),
             representations=())
    assert os.listdir(scratch) == [] and not (tmp_path / "w.html").exists()
