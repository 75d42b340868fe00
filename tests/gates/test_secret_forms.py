"""A secret is scrubbed in every form it is commonly written in (raw, JSON, XML/HTML escapes,
Python repr, percent-encoding, base64 at any alignment), from every file a run stores or
exports and from every report of it; names ending in PASS or holding PRIVATE are secret, and
`secrets: {names: [...]}` in redfirst.yaml adds names. Real `gates` processes running a real
pytest gate in a git project written here.
"""

from __future__ import annotations

import base64
import html
import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.parse
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

import pytest

from redfirst import scrub

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
PASSWORD = "pa&ss<wo\\rd>\u00e9'9 \"x/+?="
PRIVATE = "-----BEGIN KEY-----\nMIIEvQ&IBADANBgk<qhkiG9w0\n"
EXTRA = "extra-named-value-4471"

TEST_FILE = textwrap.dedent("""\
    import base64, json, os, sys, urllib.parse

    SECRETS = [os.environ["DB_PASS"], os.environ["GPG_PRIVATE_PEM"], os.environ["DEPLOY_WORD"]]


    def test_prints_and_writes_every_form():
        ev = os.environ["GATES_EVIDENCE"]
        lines = []
        for s in SECRETS:
            raw = s.encode()
            for pad in (b"", b"x", b"xy"):
                data = pad + raw + b"tail"
                for enc in (base64.b64encode, base64.urlsafe_b64encode):
                    lines += [enc(data).decode(), enc(data).decode().rstrip("=")]
            lines += [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("=")]
            lines += [json.dumps(s), json.dumps(s, ensure_ascii=False), repr(s), urllib.parse.quote(s, safe=""),
                      urllib.parse.quote_plus(s), s]
        with open(os.path.join(ev, "forms.txt"), "w") as f:
            f.write("\\n".join(lines) + "\\n")
        with open(os.path.join(ev, "evidence.jsonl"), "w") as f:
            f.write(json.dumps({"counter": "c", "value": 1}) + "\\n")
            f.write(json.dumps({"note": SECRETS}) + "\\n")
        print("\\n".join(lines))
        sys.stderr.write(repr(SECRETS) + "\\n")
        assert SECRETS[0] == "something else"


    def test_asserts_on_the_password():
        assert os.environ["DB_PASS"] in ("one", "two"), os.environ["DB_PASS"]
""")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd, check=True,
                   capture_output=True)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\nsecrets: {names: [DEPLOY_WORD]}\n")
    (root / "gates" / "g.yaml").write_text("gate: leaky\ndriver: {type: pytest, run: [tests/test_leak.py]}\n")
    (root / "tests" / "test_leak.py").write_text(TEST_FILE)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        git(root, *args)
    return root


def b64_cores(value: str) -> list[str]:
    """The base64 characters fixed by the value's bytes alone, for each alignment of it in a
    longer encoded text (both alphabets): what an encoded blob holding it always contains."""
    raw, cores = value.encode(), []
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw).decode()
        core = enc[-(-8 * k // 6):(8 * (k + len(raw))) // 6]
        cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def forms_of(value: str) -> set[str]:
    """Each form the test program (and pytest, and XML writers) may write the value in."""
    out = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], repr(value)[1:-1],
           html.escape(value), html.escape(value, quote=False), xml_escape(value),
           xml_escape(value, {'"': "&quot;"}), urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value),
           *b64_cores(value)}
    return out


def leaks(data: bytes) -> list[str]:
    return [f"{form!r} of {value[:6]!r}" for value in (PASSWORD, PRIVATE, EXTRA) for form in forms_of(value)
            if form.encode() in data]


def test_every_form_of_every_secret_is_absent_from_every_stored_exported_and_reported_file(tmp_path: Path) -> None:
    root = project(tmp_path)
    outputs = tmp_path / "gh"
    outputs.mkdir()
    env = {**os.environ, "DB_PASS": PASSWORD, "GPG_PRIVATE_PEM": PRIVATE, "DEPLOY_WORD": EXTRA,
           "GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(outputs / "output"),
           "GITHUB_STEP_SUMMARY": str(outputs / "summary")}
    proc = subprocess.run([*GATES, "run", "--root", str(root), "--junit", str(tmp_path / "run.xml"), "--html",
                           str(tmp_path / "run.html")], capture_output=True, text=True, timeout=300, cwd=root,
                          env=env)
    assert proc.returncode == 1 and "RED" in proc.stdout, proc.stdout + proc.stderr
    as_json = subprocess.run([*GATES, "run", "--root", str(root), "--json", "-q"], capture_output=True, timeout=300,
                             cwd=root, env=env)
    assert json.loads(as_json.stdout)["items"][0]["verdict"] == "RED", as_json.stdout
    records = [p for p in (root / ".redfirst" / "evidence").iterdir() if (p / "record.json").is_file()]
    assert len(records) == 2
    for record in records:
        exported = subprocess.run([*GATES, "export", "--root", str(root), record.name, str(tmp_path / "export")],
                                  capture_output=True, text=True, timeout=60, cwd=root, env=env)
        assert exported.returncode == 0, exported.stderr
    stored = {p: p.read_bytes() for top in (root / ".redfirst", tmp_path / "export", outputs)
              for p in top.rglob("*") if p.is_file() and not p.is_symlink()}
    names = {p.relative_to(tmp_path).as_posix() for p in stored}
    for want in ("stdout", "stderr", "junit.xml", "evidence/evidence.jsonl", "evidence/forms.txt", "record.json"):
        assert any(n.endswith("/" + want) and n.startswith("proj/.redfirst/evidence") for n in names), (want, names)
        assert any(n.endswith("/" + want) and n.startswith("export/") for n in names), (want, names)
    assert any(n.startswith("gh/") for n in names), names
    stored[tmp_path / "run.xml"] = (tmp_path / "run.xml").read_bytes()
    stored[tmp_path / "run.html"] = (tmp_path / "run.html").read_bytes()
    stored[Path("gates run stdout")] = proc.stdout.encode()
    stored[Path("gates run stderr")] = proc.stderr.encode()
    stored[Path("gates run --json")] = as_json.stdout + as_json.stderr
    found = {str(p): leaks(data) for p, data in stored.items() if leaks(data)}
    assert not found, found
    # What was there was replaced, not dropped: the stored output still says where a secret stood.
    (one,) = [p for p in stored if p.name == "forms.txt" and "proj/" in str(p)][:1]
    assert b"REDACTED" in stored[one]
    # The sealed, scrubbed record still regrades to the verdict it was stored with.
    for record in records:
        again = subprocess.run([*GATES, "regrade", "--root", str(root), record.name], capture_output=True,
                               text=True, timeout=60, cwd=root, env=env)
        assert again.returncode == 1 and "RED" in again.stdout, again.stdout + again.stderr


def test_secret_looking_names_take_pass_suffix_private_and_the_configured_extras() -> None:
    env = {"DB_PASS": "v" * 8 + "1", "GPG_PRIVATE_PEM": "v" * 8 + "2", "DEPLOY_WORD": "v" * 8 + "3",
           "COMPASS_HEADING": "v" * 8 + "4", "PASSAGE": "v" * 8 + "5", "HOME": "v" * 8 + "6"}
    assert set(scrub.secret_values(env)) == {"v" * 8 + "1", "v" * 8 + "2"}
    assert not any(scrub.is_secret_name(n) for n in ("PASSAGE", "COMPASS_HEADING", "HOME", "DEPLOY_WORD"))
    assert scrub.is_secret_name("DB_PASS") and scrub.is_secret_name("gpg_private_pem")
    assert set(scrub.secret_values(env, extra_names=("DEPLOY_WORD",))) >= {"v" * 8 + "3"}


def test_a_ten_mib_record_scrubs_in_well_under_a_second() -> None:
    """The scrub of a large record stays cheap (measured: see docs/guide.md)."""
    text = ("12 passed in 0.5s, step 1 of the run went fine and wrote tensors\n" * 170_000)[:10 * 1024 * 1024]
    data = (text + PASSWORD + text[:1000]).encode()
    secrets = scrub.secret_values({"DB_PASS": PASSWORD, "API_TOKEN": "ghp_abcdefghijklmnop"})
    start = time.perf_counter()
    clean = scrub.scrub_bytes(data, secrets)
    took = time.perf_counter() - start
    assert PASSWORD.encode() not in clean and clean.count(b"REDACTED") == 1
    assert took < 2.0, took


def test_a_bad_secrets_section_is_a_message_with_file_and_line(tmp_path: Path) -> None:
    root = project(tmp_path)
    config = root / "redfirst.yaml"
    for text, line, says in (("gates: {paths: [gates]}\nsecrets:\n  names: [OK_NAME, 3]\n", 3, "secrets.names[1]"),
                             ("gates: {paths: [gates]}\nsecrets: {names: [A], extra: 1}\n", 2, "only `names`"),
                             ("gates: {paths: [gates]}\nsecrets:\n  names: MY_TOKEN\n", 3, "must be a list")):
        config.write_text(text)
        proc = subprocess.run([*GATES, "check", "--root", str(root)], capture_output=True, text=True, timeout=60,
                              cwd=root)
        assert proc.returncode == 2 and f"redfirst.yaml:{line}" in proc.stdout + proc.stderr, proc.stderr
        assert says in proc.stdout + proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_file_over_the_read_cap_is_scrubbed_in_place_not_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A raw file too large to read whole still loses every form, as `*` of the same length."""
    monkeypatch.setattr(scrub, "_MAX_SCAN_BYTES", 1024)
    encoded = base64.b64encode(b"xy" + PASSWORD.encode() + b"tail")
    body = b"log line\n" * 400 + PASSWORD.encode() + b"\n" + encoded + b"\n" + html.escape(PASSWORD).encode()
    (tmp_path / "big.log").write_bytes(body)
    assert scrub.scrub_folder(tmp_path, scrub.secret_values({"DB_PASS": PASSWORD})) == ["big.log"]
    after = (tmp_path / "big.log").read_bytes()
    assert len(after) == len(body) and after.startswith(b"log line\n" * 400) and not leaks(after), leaks(after)


JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjaS1kZXBsb3kiLCJyb2xlIjoiYWRtaW4ifQ.c2lnbmF0dXJlLXNlY3JldC0xMjM0NQ"
HEXED = "ghp_R3allyS3cretT0kenValue0123456789"
UMLAUT = "p\u00e4ssw\u00f6rd-2024"
QUOTED = "it's-a-s3cret\\x"
CONTROL = "esc\x01it's-\u00e4-99"
NAMED = ("sess-9f8e7d6c5b4a", "sess-9f8e7d6c5b4b")

ENCODINGS_TEST = textwrap.dedent("""\
    import base64, os, pathlib, subprocess

    EV = pathlib.Path(os.environ["GATES_EVIDENCE"])
    E = os.environ


    def test_wrapped_base64():
        jwt = E["JWT_TOKEN"].encode()
        for pad in (b"", b"x", b"xy", b"0123456789" * 7):
            for width in ("76", "64"):
                out = subprocess.run(["base64", "-w", width], input=pad + jwt, capture_output=True).stdout
                print(out.decode())
            print(base64.encodebytes(pad + jwt).decode().replace("\\n", "\\r\\n"))
        (EV / "jwt.b64").write_bytes(subprocess.run(["base64"], input=jwt, capture_output=True).stdout)


    def test_hex():
        raw = E["API_TOKEN"].encode()
        print(raw.hex(), raw.hex().upper(), raw.hex(":"), raw.hex(" "), raw.hex(":").upper(), (b"q" + raw).hex())
        print(subprocess.run(["xxd", "-p"], input=b"lead" + raw, capture_output=True).stdout.decode())
        assert False


    def test_bytes_repr_non_ascii():
        print(os.environb[b"DB_PASS"], os.environb[b"SHELL_PASSWORD"])
        assert os.environb[b"DB_PASS"] == b"other"


    def test_shell_xtrace_quote():
        for var, lang in (("DB_PASSWORD", "C.UTF-8"), ("SHELL_PASSWORD", "C"), ("DB_PASS", "C")):
            subprocess.run(["bash", "-xc", 'true --user "admin:$' + var + '"'], env={**E, "LC_ALL": lang})
        assert False


    def test_file_names():
        for var in ("SESSION_TOKEN", "OTHER_TOKEN"):
            (EV / ("session-" + E[var] + ".log")).write_text("x")
        (EV / ("dir-" + E["SESSION_TOKEN"])).mkdir()
        (EV / ("dir-" + E["SESSION_TOKEN"]) / "inner.txt").write_text("y")
""")


def encoded_forms(value: str) -> set[bytes]:
    """What the programs above write the value as, cut at every wrap a 64- or 76-column encoder
    (or xxd's 60) may put in it: each line piece of 8 characters or more."""
    raw = value.encode()
    found = {raw.hex().encode(), raw.hex().upper().encode(), raw.hex(":").encode(), raw.hex(" ").encode(),
             repr(raw)[2:-1].encode(), value.replace("'", "'\\''").encode(),
             # bash's $'...' quoting under LC_ALL=C: each byte outside printable ASCII as \ooo
             "".join(chr(b) if 32 <= b < 127 and b not in b"'\\" else "\\" + chr(b) if b in b"'\\" else f"\\{b:03o}"
                     for b in raw).encode()}
    for pad in range(80):
        text = base64.b64encode(b"\0" * pad + raw)
        core = text[-(-8 * pad // 6):(8 * (pad + len(raw))) // 6]
        for width in (60, 64, 76):
            found |= {p for p in (core[i:i + width] for i in range(0, len(core), width)) if len(p) >= 8}
    return found


def test_secrets_in_names_wrapped_base64_hex_bytes_repr_and_shell_quoting_are_scrubbed(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "tests" / "test_leak.py").write_text(ENCODINGS_TEST)
    git(root, "commit", "-qam", "encodings")
    env = {**os.environ, "JWT_TOKEN": JWT, "API_TOKEN": HEXED, "DB_PASS": UMLAUT, "DB_PASSWORD": QUOTED,
           "SHELL_PASSWORD": CONTROL, "SESSION_TOKEN": NAMED[0], "OTHER_TOKEN": NAMED[1]}
    proc = subprocess.run([*GATES, "run", "--root", str(root)], capture_output=True, text=True, timeout=300,
                          cwd=root, env=env)
    assert proc.returncode == 1 and "RED" in proc.stdout, proc.stdout + proc.stderr
    (record,) = (root / ".redfirst" / "evidence").iterdir()
    exported = subprocess.run([*GATES, "export", "--root", str(root), record.name, str(tmp_path / "export")],
                              capture_output=True, text=True, timeout=60, cwd=root, env=env)
    assert exported.returncode == 0, exported.stderr
    paths = [p for top in (root / ".redfirst", tmp_path / "export") for p in top.rglob("*")]
    assert not [p for p in paths if any(n in p.name for n in NAMED)], paths
    # the two names that scrub alike are both kept, the folder's file too, and the record lists them
    files = json.loads((record / "record.json").read_text())["files"]
    names = sorted(n for n in files if n.startswith("evidence/session-"))
    assert len(names) == 2 and all("REDACTED" in n for n in names), files
    assert any(n.startswith("evidence/dir-REDACTED") and n.endswith("/inner.txt") for n in files), files
    found = {}
    for path in [p for p in paths if p.is_file()] + [Path("stdout")]:
        data = proc.stdout.encode() if path == Path("stdout") else path.read_bytes()
        hits = [f"{form[:30]!r}" for value in (JWT, HEXED, UMLAUT, QUOTED, CONTROL)
                for form in encoded_forms(value) | {f.encode() for f in forms_of(value)} if form in data]
        if hits:
            found[str(path)] = hits
    assert not found, found
    stdout = (record / "stdout").read_bytes()
    # what was there was replaced where it stood: each xtrace line, the wrapped blob, the bytes repr
    assert stdout.count(b"admin:REDACTED") == 3 and b"b'REDACTED'" in stdout, stdout[-3000:]
    assert b"REDACTED" in (record / "evidence" / "jwt.b64").read_bytes()
    again = subprocess.run([*GATES, "regrade", "--root", str(root), record.name], capture_output=True, text=True,
                           timeout=60, cwd=root, env=env)
    assert again.returncode == 1 and "RED" in again.stdout, again.stdout + again.stderr


COMMON_SECRET_NAMES = {"MAVEN_GPG_PASSPHRASE": "gpg-phrase-for-signing-77", "MYSQL_PWD": "mysql-client-pw-31",
                       "GH_PAT": "github_pat_11ABCDEFG0123456789"}


def test_passphrases_pwd_and_pat_variables_are_secrets_in_the_stored_record(tmp_path: Path) -> None:
    """MAVEN_GPG_PASSPHRASE (a CI signing key's passphrase), MYSQL_PWD (the MySQL client's password
    variable) and GH_PAT (a GitHub personal access token) were stored as printed. PWD and OLDPWD,
    the shell's working folders, are not secrets."""
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "g.yaml").write_text("gate: prints\ndriver: {type: pytest, run: [test_env.py]}\n")
    (root / "test_env.py").write_text(
        "import os\n\ndef test_prints():\n"
        f"    print([os.environ[n] for n in {sorted(COMMON_SECRET_NAMES)!r}], os.environ['PWD'])\n    assert False, 'shown'\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        git(root, *args)
    proc = subprocess.run([*GATES, "run", "--root", str(root)], capture_output=True, text=True, timeout=300,
                          cwd=root, env={**os.environ, **COMMON_SECRET_NAMES, "PWD": str(root)})
    assert proc.returncode == 1, proc.stdout + proc.stderr   # failing, so pytest shows what it printed
    stored = b"".join(p.read_bytes() for p in (root / ".redfirst").rglob("*") if p.is_file() and not p.is_symlink())
    assert str(root).encode() in stored   # PWD is kept: a folder, not a secret
    assert not [n for n, v in COMMON_SECRET_NAMES.items() if v.encode() in stored]
    assert not any(scrub.is_secret_name(n) for n in ("PWD", "OLDPWD", "PATH", "PATHEXT"))
