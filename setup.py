"""Packaging that pyproject.toml cannot say: the top-level folders are the sub-packages of ``kconform``
(``codecs/`` is ``kconform.codecs``, and so on), every folder under them with an ``__init__.py`` is
found here, and the optional native codec is built when a C compiler is there (pure Python when not)."""

from pathlib import Path

from setuptools import Extension, find_packages, setup

# Top-level folder -> import name. ``kconform`` itself is a namespace package.
SUBPACKAGES = ("codecs", "reference_broker", "harness", "faults", "spark_reports", "traces")

package_dir = {f"kconform.{folder}": folder for folder in SUBPACKAGES}
packages = []
for folder in SUBPACKAGES:
    if (Path(__file__).parent / folder / "__init__.py").is_file():
        packages.append(f"kconform.{folder}")
        packages += [f"kconform.{folder}.{name}" for name in find_packages(folder)]

setup(
    package_dir=package_dir,
    packages=packages,
    ext_modules=[
        Extension(
            "kconform.codecs._speedups",
            sources=["codecs/_speedups.c"],
            optional=True,  # a failed build leaves the pure-Python codecs, which are complete
            extra_compile_args=["-O2"],
        )
    ],
)
