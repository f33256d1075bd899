# SPDX-License-Identifier: LGPL-2.1-or-later
"""Build the tensorio package: pip install --no-build-isolation ./python

Links libtensorio from the source tree (built first with make -C lib,
then shipped inside the package next to the extension, found through
$ORIGIN), or, with TENSORIO_SYSTEM=1, the installed one (pkg-config
tensorio, after make install)."""

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


def version():
    text = open(os.path.join(TOP, "lib/include/tensorio/version.h")).read()
    parts = [re.search(r"#define TIO_VERSION_%s (\d+)" % k, text).group(1)
             for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


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

setup(
    name="tensorio",
    version=version(),
    description="Pinned tensor buffers, fences, batching and safetensors over libtensorio",
    license="LGPL-2.1-or-later",
    packages=["tensorio"],
    package_dir={"tensorio": os.path.relpath(os.path.join(HERE, "tensorio"))},
    ext_modules=[Extension(
        "tensorio._tensorio",
        sources=sorted(os.path.relpath(p) for p in glob.glob(os.path.join(HERE, "src", "*.c"))),
        depends=glob.glob(os.path.join(HERE, "src", "*.h")),
        extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-fvisibility=hidden"],
        **ext_args)],
    cmdclass={"build_ext": BuildExt},
    python_requires=">=3.11",
)
