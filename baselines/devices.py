"""Where a baseline runs: ``--device auto|cpu|cuda`` and ``--precision``, one code path.

Every runner resolves a :class:`Placement` once and then moves its models and batches with it;
a CUDA run is the same code as a CPU run with another device. Half precision is applied with
``torch.autocast`` (the weights stay fp32, so ops that need fp32 keep it), only on CUDA.

torch is imported lazily: the identification runners and the server import this package
without torch installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda")
PRECISION_CHOICES = ("auto", "fp32", "fp16", "bf16")

T = TypeVar("T")


def device_option(func: Callable[..., T]) -> Callable[..., T]:
    """Add ``--device auto|cpu|cuda`` (default auto) to a click command."""
    return click.option(
        "--device", default="auto", show_default=True, type=click.Choice(DEVICE_CHOICES),
        help="auto = CUDA when available, else CPU.")(func)


def precision_option(func: Callable[..., T]) -> Callable[..., T]:
    """Add ``--precision auto|fp32|fp16|bf16`` (default auto) to a click command."""
    return click.option(
        "--precision", default="auto", show_default=True, type=click.Choice(PRECISION_CHOICES),
        help="auto = bf16 on CUDA if supported, else fp16 on CUDA, fp32 on CPU.")(func)


def resolve_device(name: str, cuda_available: bool | None = None) -> torch.device:
    """The torch device for ``auto|cpu|cuda``; ``cuda`` without CUDA is a click error."""
    import torch  # lazy: see the module docstring

    if name not in DEVICE_CHOICES:
        raise click.BadParameter(f"unknown device {name!r}; choose one of "
                                 f"{', '.join(DEVICE_CHOICES)}", param_hint="--device")
    available = torch.cuda.is_available() if cuda_available is None else cuda_available
    if name == "cuda" and not available:
        raise click.BadParameter(
            "--device cuda was asked for but torch sees no CUDA device here "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}); "
            "use --device cpu or auto", param_hint="--device")
    if name == "cpu" or not available:
        return torch.device("cpu")
    return torch.device("cuda")


def resolve_dtype(device: torch.device, name: str = "auto",
                  bf16_supported: bool | None = None) -> torch.dtype:
    """The compute dtype: fp32 on CPU; on CUDA bf16 where supported, else fp16 (for auto)."""
    import torch  # lazy: see the module docstring

    if name not in PRECISION_CHOICES:
        raise click.BadParameter(f"unknown precision {name!r}", param_hint="--precision")
    if device.type != "cuda":
        if name in ("fp16", "bf16"):
            raise click.BadParameter(f"--precision {name} needs a CUDA device; on the CPU the "
                                     "baselines run in fp32", param_hint="--precision")
        return torch.float32
    if name == "auto":
        supported = (torch.cuda.is_bf16_supported() if bf16_supported is None
                     else bf16_supported)
        return torch.bfloat16 if supported else torch.float16
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


@dataclass(frozen=True)
class Placement:
    """A resolved device and compute dtype, with helpers to move models and batches there."""

    device: torch.device
    dtype: torch.dtype

    def model(self, model: T) -> T:
        """Move MODEL (an ``nn.Module``) to the device and return it."""
        moved: T = model.to(self.device)  # type: ignore[attr-defined]
        return moved

    def tensors(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """Move every tensor of a tokenizer batch (or any mapping) to the device."""
        return {key: to_device(value, self.device) for key, value in batch.items()}

    @contextmanager
    def autocast(self) -> Iterator[None]:
        """Run the block in the compute dtype (a no-op for fp32)."""
        import torch  # lazy: see the module docstring

        with torch.autocast(device_type=self.device.type, dtype=self.dtype,
                            enabled=self.dtype != torch.float32):
            yield

    def describe(self) -> dict[str, str]:
        """JSON-ready description for a run's metadata."""
        return {"device": str(self.device), "precision": str(self.dtype).removeprefix("torch.")}


def to_device(value: Any, device: torch.device) -> Any:
    """VALUE moved to DEVICE if it is a tensor (or has ``.to``), else unchanged."""
    mover = getattr(value, "to", None)
    return mover(device) if callable(mover) else value


def resolve(device: str = "auto", precision: str = "auto") -> Placement:
    """Resolve ``--device`` and ``--precision`` into a :class:`Placement`."""
    where = resolve_device(device)
    return Placement(where, resolve_dtype(where, precision))


def cpu() -> Placement:
    """The CPU placement in fp32 (the default of library calls)."""
    return resolve("cpu", "fp32")
