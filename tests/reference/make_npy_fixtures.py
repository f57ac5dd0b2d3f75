"""Make the .npy fixtures that io_test.cpp reads: files written by NumPy itself, so that the tests
compare attn::npy_bytes with numpy.save byte for byte and check attn::parse_npy against real files.

Run from the project root with Debian's NumPy (python3-numpy 1.24.2), not the pyenv python:

    /usr/bin/python3 tests/reference/make_npy_fixtures.py

It writes tests/golden/npy/*.npy. It is not run by CI; the files are committed.
"""
import io
from pathlib import Path

import numpy as np
import numpy.lib.format as npy_format

OUT = Path(__file__).resolve().parent.parent / "golden" / "npy"

# float32 values whose shortest round-trip form has 9 significant digits: 8 are not enough.
NINE_DIGITS = np.array([[0.114053644, -13.4585905, 116.683624],
                        [10740.1045, -0.0120586455, 1.40892835e-05]], dtype=np.float32)
for v in NINE_DIGITS.flat:
    assert np.float32(float(f"{v:.8g}")) != v, v


def save(name, array):
    np.save(OUT / name, array)


def write_array(name, array, version):
    buffer = io.BytesIO()
    npy_format.write_array(buffer, array, version=version)
    (OUT / name).write_bytes(buffer.getvalue())


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    # What npy_bytes must reproduce byte for byte (version 1.0, '<f4', C order).
    save("f4_2x3.npy", NINE_DIGITS)
    save("f4_vector5.npy",
         np.array([-0.0, 1.5, np.finfo(np.float32).smallest_subnormal, -np.finfo(np.float32).max,
                   0.2], dtype=np.float32))
    save("f4_1x1.npy", np.array([[42.5]], dtype=np.float32))
    # Read only: other dtypes, versions and layouts.
    save("f8_3x2.npy", np.array([[0.1, -2.5], [1.0 / 3.0, 65504.0], [1e-3, 3.0000000000000004]],
                                dtype=np.float64))
    write_array("f4_2x3_v2.npy", NINE_DIGITS, (2, 0))
    write_array("f4_2x3_v3.npy", NINE_DIGITS, (3, 0))
    save("f4_fortran.npy", np.asfortranarray(NINE_DIGITS))
    save("i4_2x2.npy", np.array([[1, 2], [3, 4]], dtype=np.int32))
    save("f4_big_endian.npy", NINE_DIGITS.astype(">f4"))
    save("f4_3d.npy", np.arange(8, dtype=np.float32).reshape(2, 2, 2))
    save("f4_scalar.npy", np.float32(1.0))
    save("f4_empty.npy", np.zeros((0, 3), dtype=np.float32))
    with_nan = NINE_DIGITS.copy()
    with_nan[1, 2] = np.nan
    save("f4_nan.npy", with_nan)


if __name__ == "__main__":
    main()
