"""Package layout that pyproject.toml cannot say: folders kept at the top of the checkout
(templates/, gold/manifest.json, gold/freshqa-manifest.json) shipped inside the packages that
read them.

The wheel installs templates/ as situatedqa_server/templates and gold/ as benchmark/gold;
the code looks there first and falls back to the checkout's folders.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["benchmark*", "baselines*", "situatedqa_server*",
                                "situatedqa"]),
        "situatedqa_server.templates",
        "benchmark.gold",
    ],
    package_dir={"situatedqa_server.templates": "templates", "benchmark.gold": "gold"},
    package_data={
        "situatedqa_server": ["static/*", "migrations/*", "migrations/versions/*.py"],
        "situatedqa_server.templates": ["*.html", "**/*.html"],
        "benchmark.gold": ["manifest.json", "freshqa-manifest.json"],
        "benchmark.harness": ["conformance.json", "lm_eval_tasks/*",
                              "evaluate_metric/situatedqa/*"],
        "baselines": ["data/*"],
    },
)
