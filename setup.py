"""Build hook: the wheel carries the optimizer hook's jars, one per Spark line.

``build_py`` runs ``scripts/build_hook_jars.py`` into the build's ``dpp/jvm/jars`` (needs a
JDK's ``javac`` and PyPI access for the Spark jars of each line; see that script). An editable
install (``pip install -e``) builds none: it uses jars under ``dpp/jvm/jars`` if ``make jars``
put them there, else compiles the sources with ``javac`` at run time.
``DPP_SPARK_BUILD_JARS=0`` skips the jars (a wheel that then needs ``javac`` at run time).
"""
import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithJars(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("DPP_SPARK_BUILD_JARS") == "0":
            return
        out = Path(self.build_lib) / "dpp" / "jvm" / "jars"
        subprocess.run([sys.executable, str(HERE / "scripts" / "build_hook_jars.py"),
                        "--out", str(out)], check=True)


setup(cmdclass={"build_py": BuildPyWithJars})
