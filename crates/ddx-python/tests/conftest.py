"""Shared fixtures and the hypothesis profile.

Random tests are derandomized by default (the same examples every run, so CI is
repeatable); ``DDX_HYPOTHESIS=thorough`` draws fresh, more numerous examples.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import ddx

settings.register_profile(
    "repeatable",
    derandomize=True,
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("DDX_HYPOTHESIS", "repeatable"))


@pytest.fixture
def f() -> ddx.Equation:
    """The specification's first example: exp(x)·sin(y)."""

    @ddx.equation
    def model():
        x = ddx.var("x")
        y = ddx.var("y")
        return ddx.exp(x) * ddx.sin(y)

    return model


@pytest.fixture
def system() -> ddx.Equation:
    """Two outputs over two symbols."""
    return ddx.equation(["x*x + y*y - 4", "x*y - 1"])


def closed_form(x: float, y: float) -> tuple[float, np.ndarray, np.ndarray]:
    """exp(x)·sin(y), its gradient and Hessian in closed form."""
    ex, s, c = np.exp(x), np.sin(y), np.cos(y)
    return ex * s, np.array([ex * s, ex * c]), np.array([[ex * s, ex * c], [ex * c, -ex * s]])


HUBER_DATA = [(0.0, 2.00), (1.0, 1.21), (2.0, 0.74), (3.0, 0.45)]
HUBER_DELTA = 0.05


def huber() -> ddx.Equation:
    """The README's Huber loss of a·exp(−b·t)."""

    @ddx.equation
    def model():
        a, b = ddx.var("a"), ddx.var("b")
        loss = 0.0
        for t, y in HUBER_DATA:
            r = y - a * ddx.exp(-b * t)
            loss = loss + ddx.select(
                abs(r) < HUBER_DELTA, r * r, HUBER_DELTA * (2.0 * abs(r) - HUBER_DELTA)
            )
        return loss

    return model
