

def test_pow2_at_least_scalars_and_arrays():
    import numpy as np

    from skdp.mechanisms._grid import pow2_at_least

    assert pow2_at_least(3.0) == 4.0 and pow2_at_least(np.array(3.0)) == 4.0
    assert pow2_at_least(0.0) == 0.0 and pow2_at_least(-1.0) == 0.0
    np.testing.assert_array_equal(pow2_at_least(np.array([3.0, 0.5, 0.0, 1.0])), [4.0, 0.5, 0.0, 1.0])
    x = np.array([3.0, 5.0])
    pow2_at_least(x)
    np.testing.assert_array_equal(x, [3.0, 5.0])  # without out=, the input is not written
