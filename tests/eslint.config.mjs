// ESLint's flat config for the pack's frontend (web/*.js), run by tests/test_ecosystem_checks.py with the
// ESLint that `make setup` installs into .setup/eslint. Self-contained (no plugins or shared configs to
// resolve): ESLint's own correctness rules, and the browser globals the extension may use.
const BROWSER = ["window", "document", "console", "fetch", "URL", "Node", "requestAnimationFrame", "setTimeout",
  "clearTimeout", "getComputedStyle", "HTMLElement", "Event", "CustomEvent", "ResizeObserver", "performance"];

export default [
  {
    files: ["web/**/*.js"],
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "module",
      globals: Object.fromEntries(BROWSER.map((name) => [name, "readonly"])),
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "no-undef": "error",
      "no-unused-vars": ["error", { args: "none" }],
      "no-redeclare": "error",
      "no-dupe-keys": "error",
      "no-dupe-args": "error",
      "no-dupe-class-members": "error",
      "no-duplicate-case": "error",
      "no-const-assign": "error",
      "no-func-assign": "error",
      "no-import-assign": "error",
      "no-unreachable": "error",
      "no-unsafe-finally": "error",
      "no-unsafe-negation": "error",
      "no-self-assign": "error",
      "no-self-compare": "error",
      "no-cond-assign": "error",
      "no-constant-condition": ["error", { checkLoops: false }],
      "no-empty-pattern": "error",
      "no-sparse-arrays": "error",
      "no-fallthrough": "error",
      "no-shadow-restricted-names": "error",
      "no-prototype-builtins": "error",
      "use-isnan": "error",
      "valid-typeof": "error",
      "getter-return": "error",
      "for-direction": "error",
      "no-global-assign": "error",
      "no-restricted-globals": ["error", { name: "window", message: "keep the pack's state in module scope or on the extension object (comfy-test lint: no writes to window)" }],
    },
  },
];
