"""The optional native codec (message decoder, v2 record reader and writer): built when a C compiler is
there, skipped (pure Python) when not."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kconform.codecs._speedups",
            sources=["codecs/_speedups.c"],
            optional=True,  # a failed build leaves the pure-Python codecs, which are complete
            extra_compile_args=["-O2"],
        )
    ]
)
