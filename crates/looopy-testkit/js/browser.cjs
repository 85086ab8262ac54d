// What the browser scripts run by `looopy_testkit::external::Browser::run_script`
// share (found at $BROWSER_KIT): the accessibility check with axe-core
// (its script at $AXE_CORE).
'use strict';

const fs = require('fs');

/** The WCAG 2.1 A and AA rules of axe-core. */
const WCAG21 = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

/**
 * Runs axe-core's WCAG 2.1 A/AA rules on what `page` shows now; resolves to
 * one line per violation (its rule, impact and first elements), none when
 * the page passes. axe is evaluated through the browser's debugging
 * protocol, so a page's Content-Security-Policy stays as served.
 */
async function axeViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) {
    await page.evaluate(fs.readFileSync(process.env.AXE_CORE, 'utf8'));
  }
  const result = await page.evaluate((tags) => window.axe.run(document, {
    runOnly: { type: 'tag', values: tags },
    resultTypes: ['violations'],
  }), WCAG21);
  return result.violations.map((v) => v.id + ' (' + v.impact + '): '
    + v.nodes.slice(0, 4).map((n) => n.target.join(' ')).join(', '));
}

module.exports = { axeViolations };
