# SPDX-License-Identifier: LGPL-2.1-or-later
"""Build the tensorio package: pip install --no-build-isolation ./python

Links libtensorio from the source tree (built first with make -C lib,
then shipped inside the package next to the extension, found through
$ORIGIN), or, with TENSORIO_SYSTEM=1, the installed one (pkg-config
tensorio, after make install). The torch accelerator (accel/) is built
too where libtorch-dev and pybind11-dev are installed, unless
TENSORIO_TORCH_ACCEL=0; without it torch tensors take the DLPack path."""

import glob
import os
import re
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
LIBO = os.path.join(TOP, "build", "lib")
SONAME = "libtensorio.so.0"
SYSTEM = os.environ.get("TENSORIO_SYSTEM") == "1"
TORCH_HDRS = ("/usr/include/torch/csrc/autograd/python_variable.h",
              "/usr/include/pybind11/pybind11.h")
TORCH_ACCEL = (os.environ.get("TENSORIO_TORCH_ACCEL") != "0" and
               all(os.path.exists(h) for h in TORCH_HDRS))


def version():
    text = open(os.path.join(TOP, "lib/include/tensorio/version.h")).read()
    parts = [re.search(r"#define TIO_VERSION_%s (\d+)" % k, text).group(1)
             for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def lib_cflags():
    """The library's compiler flags (lib/flags.mk, through python/Makefile),
    less -Werror: a newer compiler's new warning must not fail an install."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", HERE, "print-cflags"],
                         check=True, capture_output=True, text=True).stdout
    return [f for f in out.split() if f != "-Werror"]


def pkg_config(flag):
    out = subprocess.run(["pkg-config", flag, "tensorio"], check=True,
                         capture_output=True, text=True).stdout
    return out.split()


class BuildExt(build_ext):
    def run(self):
        if not SYSTEM:
            subprocess.run(["make", "-s", "-C", os.path.join(TOP, "lib")], check=True)
        super().run()
        if not SYSTEM:
            # The library travels with the extension.
            dest = os.path.join(self.build_lib if not self.inplace else HERE, "tensorio")
            os.makedirs(dest, exist_ok=True)
            shutil.copy2(os.path.join(LIBO, "libtensorio.so." + version()),
                         os.path.join(dest, SONAME))


if SYSTEM:
    ext_args = dict(extra_compile_args=pkg_config("--cflags"),
                    extra_link_args=pkg_config("--libs"))
else:
    ext_args = dict(include_dirs=[os.path.join(TOP, "lib/include"), os.path.join(TOP, "uapi")],
                    library_dirs=[LIBO], libraries=["tensorio"],
                    runtime_library_dirs=["$ORIGIN"])

ext_modules = [Extension(
    "tensorio._tensorio",
    sources=sorted(os.path.relpath(p) for p in glob.glob(os.path.join(HERE, "src", "*.c"))),
    depends=glob.glob(os.path.join(HERE, "src", "*.h")) + [os.path.join(HERE, "accel", "torch_accel.h")],
    extra_compile_args=lib_cflags() + ["-I" + os.path.join(HERE, "accel")] +
    ext_args.pop("extra_compile_args", []),
    **ext_args)]
if TORCH_ACCEL:
    ext_modules.append(Extension(
        "tensorio._torch_accel",
        sources=[os.path.relpath(os.path.join(HERE, "accel", "torch_accel.cc"))],
        depends=[os.path.join(HERE, "accel", "torch_accel.h")],
        include_dirs=["/usr/include/torch/csrc/api/include"],
        extra_compile_args=["-std=c++17", "-fvisibility=hidden"],
        libraries=["torch_python", "torch_cpu", "c10"],
        language="c++"))

setup(
    name="tensorio",
    version=version(),
    description="Pinned tensor buffers, fences, batching and safetensors over libtensorio",
    license="LGPL-2.1-or-later",
    packages=["tensorio"],
    package_dir={"tensorio": os.path.relpath(os.path.join(HERE, "tensorio"))},
    ext_modules=ext_modules,
    cmdclass={"build_ext": BuildExt},
    python_requires=">=3.11",
)
