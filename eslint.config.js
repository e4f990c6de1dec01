// Type-aware linting: the rules that catch real bugs in async daemon code
// (floating promises, misused promises, unsafe any) rather than style nits.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

export default tseslint.config(
  // What git ignores: flat config does not read .gitignore (test-results/ holds the tests' CLI bundles).
  { ignores: ['dist/', 'node_modules/', 'state/', 'coverage/', 'test-results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['bin/*.js', 'assets/*/*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  {
    // The store contract is async so it can sit on a network database; better-sqlite3 answers
    // synchronously, so the SQLite implementation's async methods have nothing to await.
    files: ['src/store/sqlite/**/*.ts'],
    rules: { '@typescript-eslint/require-await': 'off' },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      'no-console': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  { files: ['eslint.config.js', 'bin/*.js'], ...tseslint.configs.disableTypeChecked },
  { files: ['bin/*.js'], languageOptions: { globals: globals.node } },
  // The console's browser script is served as written (no build step), as a classic script.
  { files: ['assets/**/*.js'], ...tseslint.configs.disableTypeChecked },
  { files: ['assets/**/*.js'], languageOptions: { globals: globals.browser, sourceType: 'script' } },
  // Formatting is Prettier's (npm run format:check); ESLint keeps to rules that find bugs.
  prettier,
);
