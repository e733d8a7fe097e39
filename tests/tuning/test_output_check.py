"""The built network's output against the reference: the largest gap, and a tolerance that
scales with the outputs."""

from __future__ import annotations

import math

import numpy as np

from tcl.tuning.output_check import OUTPUT_TOLERANCE, OutputCheck, output_difference


def test_output_difference_is_the_largest_gap_and_infinite_where_values_cannot_match() -> None:
    a = np.array([[1.0, -2.0], [3.0, np.inf]], dtype=np.float32)
    assert output_difference(a, a.copy()) == 0.0  # the same infinity in the same place
    assert output_difference(a, a + np.float32(0.25)) == 0.25
    assert output_difference(np.array([np.nan, 1.0]), np.array([np.nan, 1.0])) == 0.0
    assert output_difference(np.array([np.nan, 1.0]), np.array([0.0, 1.0])) == math.inf
    assert output_difference(np.array([np.inf, 1.0]), np.array([5.0, 1.0])) == math.inf
    assert output_difference(np.zeros((2, 3)), np.zeros((3, 2))) == math.inf
    assert output_difference(np.array([3, 4]), np.array([3, 7])) == 3.0  # integer outputs


def test_the_check_scales_its_tolerance_with_the_outputs() -> None:
    reference = np.array([1000.0, -2.0, np.inf])  # an infinity does not set the scale
    near = reference + np.array([1.0, 0.0, 0.0])  # 1e-3 of the largest output: arithmetic
    check = OutputCheck.of(near, reference, untuned=reference * 2)
    assert check.scale == 1000.0 and check.tuned_error == 1.0
    assert not check.wrong(check.tuned_error)
    assert check.untuned_error == 1000.0 and check.wrong(check.untuned_error)
    small = OutputCheck.of(np.array([1e-6]), np.array([0.0]))  # tiny outputs: 1e-2 absolute
    assert not small.wrong(small.tuned_error) and small.untuned_error is None
    assert small.wrong(2 * OUTPUT_TOLERANCE)
