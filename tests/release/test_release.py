"""scripts/release.sh, run on a copy of the repository: setting a version changes every place
that carries it and nothing else, `--check` then passes, a place left behind makes `--check`
fail naming its file, and versions the script must not set are refused with nothing changed.

No network and no build: the release runs with --no-sbom, and its `cargo update --workspace
--offline` only rewrites the workspace's own entries of Cargo.lock.

    python3 tests/release/test_release.py [-v]
"""

import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
IMAGE = "ghcr.io/gpucloud/gpucloud-operator"
CHART = "deploy/helm/gpucloud-operator/Chart.yaml"
NEW = "9.9.9"
# A user's overlay pinning the image with kustomize, each order of an entry's keys.
OVERLAY = "deploy/overlays/pinned/kustomization.yaml"
OVERLAY_TEXT = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
images:
  - name: busybox
    newTag: "1.36"
  - name: {image}
    newTag: "{version}"
  - newTag: {version}
    name: {image}
"""


def read(root, path):
    with open(os.path.join(root, path)) as f:
        return f.read()


def write(root, path, text):
    os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
    with open(os.path.join(root, path), "w") as f:
        f.write(text)


def workspace_version(root):
    section = None
    for line in read(root, "Cargo.toml").splitlines():
        if line.startswith("["):
            section = line.strip()
        elif section == "[workspace.package]" and line.startswith("version"):
            return line.split('"')[1]
    raise AssertionError("Cargo.toml has no [workspace.package] version")


def lock_workspace_versions(root):
    """{name: version} of Cargo.lock's packages without a source: the workspace's own."""
    found = {}
    for block in read(root, "Cargo.lock").split("[[package]]")[1:]:
        fields = dict(re.findall(r'^(\w+) = "([^"]*)"', block, re.M))
        if "source" not in fields:
            found[fields["name"]] = fields["version"]
    return found


def snapshot(root):
    """Every file of the copy, by path, with its text (or bytes)."""
    files = {}
    for base, _, names in os.walk(root):
        for name in names:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    return files


class Copy:
    """The repository's files as the working tree has them (committed or not), in a
    temporary directory that is not a git checkout."""

    def __init__(self):
        listed = subprocess.run(
            ["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            check=True, capture_output=True).stdout.decode().split("\0")
        self.root = tempfile.mkdtemp(prefix="gpucloud-release-test.")
        for path in filter(None, listed):
            source = os.path.join(ROOT, path)
            if os.path.isfile(source):
                os.makedirs(os.path.dirname(os.path.join(self.root, path)), exist_ok=True)
                shutil.copy2(source, os.path.join(self.root, path))

    def release(self, *args):
        return subprocess.run([os.path.join(self.root, "scripts", "release.sh"), *args],
                              capture_output=True, text=True, timeout=120)

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


class OnACopy(unittest.TestCase):
    """A test class whose tests share one copy of the repository."""

    @classmethod
    def setUpClass(cls):
        cls.copy = Copy()
        cls.root = cls.copy.root
        cls.version = workspace_version(cls.root)

    @classmethod
    def tearDownClass(cls):
        cls.copy.remove()


class ReleaseScript(OnACopy):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.old = cls.version
        write(cls.root, OVERLAY, OVERLAY_TEXT.format(image=IMAGE, version=cls.old))
        cls.checked_before = cls.copy.release("--check")
        cls.before = snapshot(cls.root)
        cls.today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        cls.result = cls.copy.release(NEW, "--no-sbom")
        cls.after = snapshot(cls.root)
        cls.checked_after = cls.copy.release("--check")

    def test_the_versions_agree_before(self):
        self.assertEqual(self.checked_before.returncode, 0, self.checked_before.stderr)

    def test_the_release_succeeds_and_says_what_it_changed(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        out = self.result.stdout
        for path in ["Cargo.toml", "Cargo.lock", CHART, "deploy/base/deployment.yaml",
                     "Dockerfile", OVERLAY, "CHANGELOG.md"]:
            self.assertIn(path, out)
        self.assertIn(f"git tag -a v{NEW}", out)
        self.assertFalse(os.path.exists(os.path.join(self.root, "dist")), "--no-sbom wrote an SBOM")

    def test_cargo_toml_and_lock_carry_the_new_version(self):
        self.assertEqual(workspace_version(self.root), NEW)
        lock = lock_workspace_versions(self.root)
        self.assertIn("gpucloud-operator", lock)
        self.assertEqual(set(lock.values()), {NEW}, lock)
        # Only those six version lines changed: nothing else was resolved anew.
        old = self.before["Cargo.lock"].decode().splitlines()
        new = self.after["Cargo.lock"].decode().splitlines()
        self.assertEqual(len(old), len(new))
        changed = [(a, b) for a, b in zip(old, new) if a != b]
        self.assertEqual(changed, [(f'version = "{self.old}"', f'version = "{NEW}"')] * len(lock))

    def test_the_chart_carries_the_new_version(self):
        chart = read(self.root, CHART)
        self.assertRegex(chart, rf"(?m)^version: {re.escape(NEW)}$")
        self.assertRegex(chart, rf'(?m)^appVersion: "{re.escape(NEW)}"$')

    def test_every_image_reference_carries_the_new_tag(self):
        for path in ["deploy/base/deployment.yaml", "Dockerfile"]:
            text = read(self.root, path)
            self.assertIn(f"{IMAGE}:{NEW}", text, path)
            self.assertNotIn(f"{IMAGE}:{self.old}", text, path)
        overlay = read(self.root, OVERLAY)
        self.assertEqual(overlay.count(f'newTag: "{NEW}"'), 2, overlay)
        self.assertIn('newTag: "1.36"', overlay, "another image's tag was changed")

    def test_the_changelog_moves_unreleased_to_the_new_version(self):
        old = self.before["CHANGELOG.md"].decode()
        new = read(self.root, "CHANGELOG.md")
        self.assertIn(f"## [Unreleased]\n\n## [{NEW}] - {self.today}\n", new)
        # What Unreleased held is now the new version's.
        held = old.split("## [Unreleased]\n", 1)[1].split("\n## [", 1)[0]
        self.assertIn(held, new.split(f"## [{NEW}] - {self.today}\n", 1)[1])
        url = "https://github.com/gpucloud/gpucloud-operator"
        self.assertIn(f"[Unreleased]: {url}/compare/v{NEW}...HEAD\n", new)
        self.assertIn(f"[{NEW}]: {url}/compare/v{self.old}...v{NEW}\n", new)

    def test_nothing_else_changed(self):
        changed = {p for p in set(self.before) | set(self.after)
                   if self.before.get(p) != self.after.get(p)}
        self.assertEqual(changed, {"Cargo.toml", "Cargo.lock", CHART, "deploy/base/deployment.yaml",
                                   "Dockerfile", OVERLAY, "CHANGELOG.md"})

    def test_the_versions_agree_after(self):
        self.assertEqual(self.checked_after.returncode, 0, self.checked_after.stderr)
        self.assertIn(f"versions agree: {NEW}", self.checked_after.stdout)


class Disagreements(unittest.TestCase):
    """Each place left at another version fails --check, which names its file."""

    def setUp(self):
        self.copy = Copy()
        self.root = self.copy.root
        self.version = workspace_version(self.root)

    def tearDown(self):
        self.copy.remove()

    def edit(self, path, old, new):
        text = read(self.root, path)
        self.assertIn(old, text, path)
        write(self.root, path, text.replace(old, new, 1))

    def assert_check_names(self, *paths):
        result = self.copy.release("--check")
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        for path in paths:
            self.assertIn(path, result.stderr)
        return result.stderr

    def test_the_chart(self):
        self.edit(CHART, f'appVersion: "{self.version}"', 'appVersion: "0.0.1"')
        self.assertNotIn("Dockerfile", self.assert_check_names(CHART))

    def test_the_deployment_and_the_dockerfile(self):
        self.edit("deploy/base/deployment.yaml", f"{IMAGE}:{self.version}", f"{IMAGE}:0.0.1")
        self.edit("Dockerfile", f"{IMAGE}:{self.version}", f"{IMAGE}:0.0.2")
        self.assert_check_names("deploy/base/deployment.yaml", "Dockerfile")

    def test_a_deployment_without_a_versioned_image(self):
        self.edit("deploy/base/deployment.yaml", f"{IMAGE}:{self.version}", f"{IMAGE}:latest")
        self.assert_check_names("deploy/base/deployment.yaml")

    def test_a_kustomize_new_tag(self):
        write(self.root, OVERLAY, OVERLAY_TEXT.format(image=IMAGE, version="0.0.1"))
        self.assert_check_names(OVERLAY)

    def test_the_chart_values_pinning_another_tag(self):
        self.edit("deploy/helm/gpucloud-operator/values.yaml", 'tag: ""', 'tag: "0.0.1"')
        self.assert_check_names("deploy/helm/gpucloud-operator/values.yaml")

    def test_cargo_toml(self):
        self.edit("Cargo.toml", f'version = "{self.version}"', 'version = "0.0.1"')
        # Cargo.toml is the reference: every other place now disagrees with it.
        self.assert_check_names("Cargo.lock", CHART, "deploy/base/deployment.yaml")


class Refusals(OnACopy):
    """What the script must not set is refused, and nothing is changed."""

    def assert_refused(self, *args, says):
        before = snapshot(self.root)
        result = self.copy.release(*args)
        self.assertNotEqual(result.returncode, 0, f"{args}: {result.stdout}")
        self.assertIn(says, result.stderr, args)
        self.assertEqual(snapshot(self.root), before, f"{args} changed files")

    def test_malformed_versions(self):
        for bad in ["1.2", "1.2.3.4", "01.2.3", "1.2.x", "1.2.3-", "1.2.3 ", "", "latest"]:
            with self.subTest(bad=bad):
                self.assert_refused(bad, "--no-sbom", says="")
        self.assert_refused("v9.9.9", "--no-sbom", says="without the v")
        self.assert_refused("9.9.9+build.1", "--no-sbom", says="build metadata")
        self.assert_refused("not-a-version", "--no-sbom", says="is not a version")

    def test_versions_not_newer(self):
        self.assert_refused(self.version, "--no-sbom", says="already the version")
        self.assert_refused("0.0.1", "--no-sbom", says="older than the current version")
        self.assert_refused(f"{self.version}-rc.1", "--no-sbom", says="pre-release of")

    def test_an_unreleased_section_with_nothing_in_it(self):
        changelog = read(self.root, "CHANGELOG.md")
        head, rest = changelog.split("## [Unreleased]\n", 1)
        write(self.root, "CHANGELOG.md", head + "## [Unreleased]\n\n## [" + rest.split("\n## [", 1)[1])
        try:
            self.assert_refused(NEW, "--no-sbom", says="Unreleased lists no change")
        finally:
            write(self.root, "CHANGELOG.md", changelog)

    def test_check_takes_no_version(self):
        self.assert_refused("--check", NEW, says="takes no VERSION")


if __name__ == "__main__":
    unittest.main(verbosity=2 if "-v" in sys.argv else 1, argv=sys.argv[:1])
