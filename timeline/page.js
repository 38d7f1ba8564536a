(function(){
var body=document.getElementById('details-body'),hint=document.getElementById('details-hint'),cur=null;
function add(k,v){var dt=document.createElement('dt');dt.textContent=k;var dd=document.createElement('dd');
 v.split(/(\s+)/).forEach(function(p){if(!p)return;if(/^\s/.test(p)||p.length>30){dd.appendChild(document.createTextNode(p));return;}
  var w=document.createElement('span');w.className='w';w.textContent=p;dd.appendChild(w);});
 body.appendChild(dt);body.appendChild(dd);}
function rows(r,skip){if(!r)return;var hs=r.closest('table').querySelectorAll('thead th');
 for(var i=0;i<r.cells.length;i++){var k=hs[i]?hs[i].textContent:'';if(skip.indexOf(k)<0)add(k,r.cells[i].textContent);}}
var svg=document.getElementById('timeline'),box=document.getElementById('selbox'),marked=[];
function ring(el){var b=el.getBBox(),m=svg.getScreenCTM().inverse().multiply(el.getScreenCTM());
 var p=new DOMPoint(b.x,b.y).matrixTransform(m),q=new DOMPoint(b.x+b.width,b.y+b.height).matrixTransform(m);
 var x=Math.min(p.x,q.x)-3,y=Math.min(p.y,q.y)-3,w=Math.abs(q.x-p.x)+6,h=Math.abs(q.y-p.y)+6;
 for(var r of box.children){r.setAttribute('x',x);r.setAttribute('y',y);r.setAttribute('width',w);r.setAttribute('height',h);}
 box.removeAttribute('display');}
function bar(el){var s=el.getAttribute('data-seq');
 if(el.classList.contains('stale')||el.classList.contains('label')||el.classList.contains('waited'))return svg.querySelector('rect.b[data-seq="'+s+'"]')||el;
 return el;}
function show(el){el=bar(el);var s=el.getAttribute('data-seq');if(cur)cur.classList.remove('sel');cur=el;el.classList.add('sel');ring(el);
 marked.forEach(function(r){r.classList.remove('sel');});marked=[];
 ['h','e'].forEach(function(p){var r=document.getElementById(p+s);if(r){r.classList.add('sel');marked.push(r);}});
 body.textContent='';hint.textContent='Selected: seq '+s;hint.className='selected';
 if(el.getAttribute('data-count'))add('Stands for',el.getAttribute('data-count')+' (this is the first)');
 var h=(el.classList.contains('b')||el.classList.contains('agg'))&&document.getElementById('h'+s),e=document.getElementById('e'+s);
 if(h)rows(h,[]);rows(e,h?['Seq','Lock','Actor','Request']:[]);
 if(!h&&!e){add('Seq',s);add('Note','its event is past the tables\' limit');}}
function pick(e){var el=e.target.closest&&e.target.closest('[data-seq]');if(el&&el.closest('svg'))show(el);}
svg.addEventListener('click',pick);svg.addEventListener('mouseover',pick);svg.addEventListener('focusin',pick);
var m=/^#seq=(\d+)$/.exec(location.hash);if(m){var q='[data-seq="'+m[1]+'"]',el=svg.querySelector('.mk'+q)||svg.querySelector(q);if(el)show(el);}
})();
