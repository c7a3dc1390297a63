// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'tmp/**', 'docs/api/**', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/explicit-module-boundary-types': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // Two copies of js-bson can share a process (ESM here, CommonJS in the mongodb driver): a value of one
      // is no instance of the other's classes. Recognise them by `_bsontype` (src/util/bson-type.ts).
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "BinaryExpression[operator='instanceof'][right.name=/^(Binary|BSONRegExp|BSONSymbol|Code|DBRef|Decimal128|Double|Int32|Long|MaxKey|MinKey|ObjectId|Timestamp|UUID)$/]",
          message: 'Recognise js-bson values by _bsontype (isBsonValue), never instanceof.',
        },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['test/**', 'bench/**', 'examples/**'],
    rules: {
      '@typescript-eslint/explicit-module-boundary-types': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
